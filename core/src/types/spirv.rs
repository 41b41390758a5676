//! Reading kernel signatures out of SPIR-V modules.
//!
//! UR's `urProgramCreateWithIL` gives a module and nothing else: the kernels'
//! names and arguments must come from the module itself. Two flavours exist:
//!
//! - **OpenCL kernels** (execution model `Kernel`): each entry point's
//!   `OpFunctionParameter`s are its arguments. A pointer to `CrossWorkgroup`,
//!   `Generic`, `UniformConstant` (OpenCL `__constant`), `StorageBuffer` or
//!   `PhysicalStorageBuffer` memory is a global argument, a pointer to
//!   `Workgroup` memory a local one; scalars, vectors and structures are values
//!   of their size (member `Offset` and `ArrayStride` decorations where given,
//!   the C layout otherwise), and a `ByVal` pointer is a value of its pointee's
//!   size. `LocalSize` / `LocalSizeId` execution modes give the required
//!   work-group size, `MaxWorkgroupSizeINTEL` (SPV_INTEL_kernel_attributes) a
//!   declared maximum, `SubgroupSize` the required sub-group size and
//!   `SubgroupsPerWorkgroup` the required number of sub-groups.
//! - **This project's Vulkan compute shaders** (execution model `GLCompute`,
//!   docs/vulkan.md): the arguments are the members at offset 64 and beyond of
//!   the argument block that the push constant's `PhysicalStorageBuffer`
//!   pointer refers to. A pointer member is a global argument, any other member
//!   a value of its size; the local-memory argument `i` is the specialization
//!   constant with id `100 + i`, which takes no room in the block. A local size
//!   fixed in the module (rather than left to specialization constants 0, 1
//!   and 2) is the required work-group size.
//!
//! Anything else (images, samplers, pipes, other execution models) is reported
//! as unsupported or as an invalid binary, never guessed.

use std::collections::{HashMap, HashSet};

use crate::types::error::Result;
use crate::types::program::{ArgKind, KernelSignature};
use crate::{ensure, err};

/// The SPIR-V magic number.
pub const MAGIC: u32 = 0x0723_0203;

/// The execution model of an entry point this reader understands.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ExecutionModel {
    /// An OpenCL kernel.
    Kernel,
    /// A Vulkan compute shader with this project's kernel ABI.
    GlCompute,
}

/// One entry point of a module, with the signature read from it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntryPoint {
    /// Its execution model.
    pub model: ExecutionModel,
    /// Its name and arguments; the required work-group size where the module fixes one.
    pub signature: KernelSignature,
}

/// Converts bytes into SPIR-V words, accepting either byte order.
pub fn words(bytes: &[u8]) -> Result<Vec<u32>> {
    ensure!(
        bytes.len() >= 20 && bytes.len().is_multiple_of(4),
        InvalidBinary,
        "{} bytes are not a SPIR-V module (a header of 5 words and a whole number of words)",
        bytes.len()
    );
    let le: Vec<u32> = bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    if le[0] == MAGIC {
        return Ok(le);
    }
    ensure!(le[0].swap_bytes() == MAGIC, InvalidBinary, "not a SPIR-V module (magic number {:#010x})", le[0]);
    Ok(le.into_iter().map(u32::swap_bytes).collect())
}

/// Whether `bytes` start with the SPIR-V magic number, in either byte order.
pub fn is_spirv(bytes: &[u8]) -> bool {
    bytes.len() >= 4 && {
        let w = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        w == MAGIC || w.swap_bytes() == MAGIC
    }
}

// Opcodes.
const OP_MEMORY_MODEL: u32 = 14;
const OP_ENTRY_POINT: u32 = 15;
const OP_EXECUTION_MODE: u32 = 16;
const OP_TYPE_VOID: u32 = 19;
const OP_TYPE_BOOL: u32 = 20;
const OP_TYPE_INT: u32 = 21;
const OP_TYPE_FLOAT: u32 = 22;
const OP_TYPE_VECTOR: u32 = 23;
const OP_TYPE_IMAGE: u32 = 25;
const OP_TYPE_SAMPLER: u32 = 26;
const OP_TYPE_ARRAY: u32 = 28;
const OP_TYPE_STRUCT: u32 = 30;
const OP_TYPE_OPAQUE: u32 = 31;
const OP_TYPE_POINTER: u32 = 32;
const OP_TYPE_EVENT: u32 = 34;
const OP_TYPE_PIPE: u32 = 38;
const OP_TYPE_FORWARD_POINTER: u32 = 39;
const OP_CONSTANT: u32 = 43;
const OP_CONSTANT_COMPOSITE: u32 = 44;
const OP_SPEC_CONSTANT: u32 = 50;
const OP_SPEC_CONSTANT_COMPOSITE: u32 = 51;
const OP_FUNCTION: u32 = 54;
const OP_FUNCTION_PARAMETER: u32 = 55;
const OP_VARIABLE: u32 = 59;
const OP_DECORATE: u32 = 71;
const OP_MEMBER_DECORATE: u32 = 72;
const OP_EXECUTION_MODE_ID: u32 = 331;

// Execution models.
const MODEL_GL_COMPUTE: u32 = 5;
const MODEL_KERNEL: u32 = 6;
/// The `OpenCL` memory model of `OpMemoryModel`.
const MEMORY_MODEL_OPENCL: u32 = 2;

// Execution modes.
const MODE_LOCAL_SIZE: u32 = 17;
const MODE_SUBGROUP_SIZE: u32 = 35;
const MODE_SUBGROUPS_PER_WORKGROUP: u32 = 36;
const MODE_MAX_WORKGROUP_SIZE_INTEL: u32 = 5893;
const MODE_LOCAL_SIZE_ID: u32 = 38;

// Storage classes.
const SC_UNIFORM_CONSTANT: u32 = 0;
const SC_WORKGROUP: u32 = 4;
const SC_CROSS_WORKGROUP: u32 = 5;
const SC_FUNCTION: u32 = 7;
const SC_GENERIC: u32 = 8;
const SC_PUSH_CONSTANT: u32 = 9;
const SC_STORAGE_BUFFER: u32 = 12;
const SC_PHYSICAL_STORAGE_BUFFER: u32 = 5349;

// Decorations.
const DEC_SPEC_ID: u32 = 1;
const DEC_ARRAY_STRIDE: u32 = 6;
const DEC_BUILT_IN: u32 = 11;
const DEC_CPACKED: u32 = 10;
const DEC_OFFSET: u32 = 35;
const DEC_FUNC_PARAM_ATTR: u32 = 38;
const BUILT_IN_WORKGROUP_SIZE: u32 = 25;
const PARAM_ATTR_BY_VAL: u32 = 2;

/// Bytes before the first argument of a Vulkan argument block.
const BLOCK_HEADER: u64 = 64;
/// The specialization constant id of local-memory argument 0's size.
const LOCAL_SPEC_BASE: u32 = 100;
/// The largest value a layout computes: far beyond any kernel argument, and
/// small enough that no sum or product of two such sizes overflows.
const MAX_VALUE_BYTES: u64 = 1 << 24;

#[derive(Clone, Debug)]
enum Type {
    Scalar {
        size: u64,
    },
    Vector {
        elem: u32,
        count: u64,
    },
    Array {
        elem: u32,
        length: u32,
    },
    Struct {
        members: Vec<u32>,
    },
    Pointer {
        storage: u32,
        pointee: u32,
    },
    /// Images, samplers, events, pipes, opaque types: no argument this reader can describe.
    Opaque(&'static str),
    Void,
}

#[derive(Default)]
struct Module {
    types: HashMap<u32, Type>,
    /// Scalar constants: id → value (low 64 bits); whether it is a specialization constant.
    constants: HashMap<u32, (u64, bool)>,
    /// Composite constants: id → constituents; whether specializable.
    composites: HashMap<u32, (Vec<u32>, bool)>,
    decorations: HashMap<(u32, u32), Vec<u32>>,
    member_offsets: HashMap<(u32, u32), u64>,
    packed: HashSet<u32>,
    /// Parameters decorated `FuncParamAttr ByVal` (a parameter has one such
    /// decoration per attribute, so they are not kept in `decorations`).
    by_val: HashSet<u32>,
    entries: Vec<(u32, u32, String)>,
    local_size: HashMap<u32, [Option<u32>; 3]>,
    local_size_fixed: HashMap<u32, [u64; 3]>,
    max_size: HashMap<u32, [usize; 3]>,
    sub_group_size: HashMap<u32, u32>,
    sub_groups: HashMap<u32, u32>,
    params: HashMap<u32, Vec<(u32, u32)>>,
    /// Pointer types of push-constant variables.
    push_constants: Vec<u32>,
    spec_ids: Vec<u32>,
    /// Whether `OpMemoryModel` names the OpenCL memory model.
    opencl_memory: bool,
}

fn string_at(words: &[u32]) -> Result<(String, usize)> {
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let end = bytes.iter().position(|b| *b == 0).ok_or_else(|| err!(InvalidBinary, "unterminated string literal"))?;
    let s = String::from_utf8(bytes[..end].to_vec()).map_err(|_| err!(InvalidBinary, "a name is not UTF-8"))?;
    Ok((s, end / 4 + 1))
}

/// One SPIR-V instruction: its opcode, where it starts and its operands.
struct Instruction<'a> {
    opcode: u32,
    at: usize,
    ops: &'a [u32],
}

impl Instruction<'_> {
    /// Refuses an instruction with fewer than `n` operands.
    fn need(&self, n: usize) -> Result<()> {
        ensure!(
            self.ops.len() >= n,
            InvalidBinary,
            "SPIR-V instruction {} at word {} is too short",
            self.opcode,
            self.at
        );
        Ok(())
    }
}

impl Module {
    /// Reads the declarations a kernel signature needs, one instruction at
    /// a time, each group by its own step; other instructions are skipped.
    fn parse(words: &[u32]) -> Result<Module> {
        let mut m = Module::default();
        let mut current_function = None;
        let mut at = 5;
        while at < words.len() {
            let (count, opcode) = ((words[at] >> 16) as usize, words[at] & 0xffff);
            ensure!(
                count != 0 && at + count <= words.len(),
                InvalidBinary,
                "malformed SPIR-V instruction at word {at}"
            );
            let inst = Instruction { opcode, at, ops: &words[at + 1..at + count] };
            match opcode {
                OP_MEMORY_MODEL => m.opencl_memory = inst.ops.get(1) == Some(&MEMORY_MODEL_OPENCL),
                OP_ENTRY_POINT | OP_EXECUTION_MODE | OP_EXECUTION_MODE_ID => m.mode(&inst)?,
                OP_CONSTANT | OP_SPEC_CONSTANT | OP_CONSTANT_COMPOSITE | OP_SPEC_CONSTANT_COMPOSITE | OP_VARIABLE => {
                    m.value(&inst)?
                }
                OP_FUNCTION | OP_FUNCTION_PARAMETER => m.function(&inst, &mut current_function)?,
                OP_DECORATE | OP_MEMBER_DECORATE => m.decoration(&inst)?,
                _ => m.type_declaration(&inst)?,
            }
            at += count;
        }
        Ok(m)
    }

    /// Entry points and their execution modes (fixed or maximal work-group sizes, sub-groups).
    fn mode(&mut self, inst: &Instruction<'_>) -> Result<()> {
        let (opcode, ops, need) = (inst.opcode, inst.ops, |n| inst.need(n));
        match opcode {
            OP_ENTRY_POINT => {
                need(3)?;
                let (name, _) = string_at(&ops[2..])?;
                self.entries.push((ops[0], ops[1], name));
            }
            OP_EXECUTION_MODE => {
                need(2)?;
                match ops[1] {
                    MODE_LOCAL_SIZE => {
                        need(5)?;
                        self.local_size_fixed.insert(ops[0], [ops[2] as u64, ops[3] as u64, ops[4] as u64]);
                    }
                    MODE_MAX_WORKGROUP_SIZE_INTEL => {
                        need(5)?;
                        self.max_size.insert(ops[0], [ops[2] as usize, ops[3] as usize, ops[4] as usize]);
                    }
                    MODE_SUBGROUP_SIZE => {
                        need(3)?;
                        self.sub_group_size.insert(ops[0], ops[2]);
                    }
                    MODE_SUBGROUPS_PER_WORKGROUP => {
                        need(3)?;
                        self.sub_groups.insert(ops[0], ops[2]);
                    }
                    _ => {}
                }
            }
            OP_EXECUTION_MODE_ID => {
                need(2)?;
                if ops[1] == MODE_LOCAL_SIZE_ID {
                    need(5)?;
                    self.local_size.insert(ops[0], [Some(ops[2]), Some(ops[3]), Some(ops[4])]);
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// A type declaration; any other instruction is skipped.
    fn type_declaration(&mut self, inst: &Instruction<'_>) -> Result<()> {
        let (opcode, ops, need) = (inst.opcode, inst.ops, |n| inst.need(n));
        match opcode {
            OP_TYPE_VOID => {
                need(1)?;
                self.types.insert(ops[0], Type::Void);
            }
            OP_TYPE_BOOL => {
                need(1)?;
                self.types.insert(ops[0], Type::Scalar { size: 1 });
            }
            OP_TYPE_INT | OP_TYPE_FLOAT => {
                need(2)?;
                self.types.insert(ops[0], Type::Scalar { size: (ops[1] as u64).div_ceil(8) });
            }
            OP_TYPE_VECTOR => {
                need(3)?;
                self.types.insert(ops[0], Type::Vector { elem: ops[1], count: ops[2] as u64 });
            }
            OP_TYPE_ARRAY => {
                need(3)?;
                self.types.insert(ops[0], Type::Array { elem: ops[1], length: ops[2] });
            }
            OP_TYPE_STRUCT => {
                need(1)?;
                self.types.insert(ops[0], Type::Struct { members: ops[1..].to_vec() });
            }
            OP_TYPE_POINTER => {
                need(3)?;
                self.types.insert(ops[0], Type::Pointer { storage: ops[1], pointee: ops[2] });
            }
            OP_TYPE_IMAGE | OP_TYPE_SAMPLER | OP_TYPE_EVENT | OP_TYPE_PIPE | OP_TYPE_OPAQUE => {
                need(1)?;
                let what = match opcode {
                    OP_TYPE_IMAGE => "an image",
                    OP_TYPE_SAMPLER => "a sampler",
                    OP_TYPE_EVENT => "an event",
                    OP_TYPE_PIPE => "a pipe",
                    _ => "an opaque type",
                };
                self.types.insert(ops[0], Type::Opaque(what));
            }
            OP_TYPE_FORWARD_POINTER => {}
            _ => {}
        }
        Ok(())
    }

    /// Scalar and composite constants, and push-constant variables.
    fn value(&mut self, inst: &Instruction<'_>) -> Result<()> {
        let (opcode, ops, need) = (inst.opcode, inst.ops, |n| inst.need(n));
        match opcode {
            OP_CONSTANT | OP_SPEC_CONSTANT => {
                need(3)?;
                let high = ops.get(3).copied().unwrap_or(0) as u64;
                self.constants.insert(ops[1], (ops[2] as u64 | high << 32, opcode == OP_SPEC_CONSTANT));
            }
            OP_CONSTANT_COMPOSITE | OP_SPEC_CONSTANT_COMPOSITE => {
                need(2)?;
                self.composites.insert(ops[1], (ops[2..].to_vec(), opcode == OP_SPEC_CONSTANT_COMPOSITE));
            }
            OP_VARIABLE => {
                need(3)?;
                if ops[2] == SC_PUSH_CONSTANT {
                    // The variable's pointer type.
                    self.push_constants.push(ops[0]);
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// A function, or a parameter of the function `current` declares.
    fn function(&mut self, inst: &Instruction<'_>, current: &mut Option<u32>) -> Result<()> {
        let (at, ops) = (inst.at, inst.ops);
        match inst.opcode {
            OP_FUNCTION => {
                inst.need(2)?;
                *current = Some(ops[1]);
                self.params.entry(ops[1]).or_default();
            }
            _ => {
                inst.need(2)?;
                let f = current
                    .ok_or_else(|| err!(InvalidBinary, "OpFunctionParameter outside a function at word {at}"))?;
                self.params.entry(f).or_default().push((ops[0], ops[1]));
            }
        }
        Ok(())
    }

    /// Decorations: specialization ids, packing, by-value parameters, member offsets.
    fn decoration(&mut self, inst: &Instruction<'_>) -> Result<()> {
        let (opcode, ops, need) = (inst.opcode, inst.ops, |n| inst.need(n));
        match opcode {
            OP_DECORATE => {
                need(2)?;
                if ops[1] == DEC_SPEC_ID && ops.len() >= 3 {
                    self.spec_ids.push(ops[2]);
                }
                if ops[1] == DEC_CPACKED {
                    self.packed.insert(ops[0]);
                }
                if ops[1] == DEC_FUNC_PARAM_ATTR && ops.get(2) == Some(&PARAM_ATTR_BY_VAL) {
                    self.by_val.insert(ops[0]);
                }
                self.decorations.insert((ops[0], ops[1]), ops[2..].to_vec());
            }
            OP_MEMBER_DECORATE => {
                need(3)?;
                if ops[2] == DEC_OFFSET {
                    need(4)?;
                    self.member_offsets.insert((ops[0], ops[1]), ops[3] as u64);
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn ty(&self, id: u32) -> Result<&Type> {
        self.types.get(&id).ok_or_else(|| err!(InvalidBinary, "SPIR-V type %{id} is not defined"))
    }

    fn constant(&self, id: u32) -> Result<u64> {
        self.constants
            .get(&id)
            .map(|c| c.0)
            .ok_or_else(|| err!(InvalidBinary, "SPIR-V constant %{id} is not defined or not a scalar"))
    }

    /// Size and alignment of a value of type `id` in C layout (or the
    /// module's explicit layout where it decorates one).
    fn layout(&self, id: u32, depth: u32) -> Result<(u64, u64)> {
        ensure!(depth < 64, InvalidBinary, "SPIR-V type %{id} nests too deeply");
        let (size, align) = self.layout_unchecked(id, depth)?;
        ensure!(size <= MAX_VALUE_BYTES, InvalidBinary, "SPIR-V type %{id} is {size} bytes, too large for an argument");
        Ok((size, align))
    }

    fn layout_unchecked(&self, id: u32, depth: u32) -> Result<(u64, u64)> {
        Ok(match self.ty(id)? {
            Type::Scalar { size } => (*size, *size),
            Type::Vector { elem, count } => {
                let (e, _) = self.layout(*elem, depth + 1)?;
                // OpenCL rounds 3-element vectors up to 4.
                let n = if *count == 3 { 4 } else { *count };
                (e * n, (e * n).max(1))
            }
            Type::Array { elem, length } => {
                let (e, align) = self.layout(*elem, depth + 1)?;
                let stride = match self.decorations.get(&(id, DEC_ARRAY_STRIDE)) {
                    Some(s) if !s.is_empty() => s[0] as u64,
                    _ => e,
                };
                let n = self.constant(*length)?;
                let size = stride
                    .checked_mul(n)
                    .ok_or_else(|| err!(InvalidBinary, "SPIR-V array %{id} of {n} elements overflows"))?;
                (size, align)
            }
            Type::Struct { members } => {
                let packed = self.packed.contains(&id);
                let (mut end, mut align) = (0u64, 1u64);
                for (i, m) in members.iter().enumerate() {
                    let (size, a) = self.layout(*m, depth + 1)?;
                    let a = if packed { 1 } else { a.max(1) };
                    let offset = match self.member_offsets.get(&(id, i as u32)) {
                        Some(o) => *o,
                        None => end.next_multiple_of(a),
                    };
                    end = end.max(offset + size);
                    ensure!(end <= MAX_VALUE_BYTES, InvalidBinary, "SPIR-V structure %{id} is too large");
                    align = align.max(a);
                }
                (end.next_multiple_of(align), align)
            }
            Type::Pointer { .. } => (8, 8),
            Type::Opaque(what) => {
                return Err(err!(UnsupportedFeature, "SPIR-V type %{id} is {what}, which has no size as a value"));
            }
            Type::Void => return Err(err!(InvalidBinary, "SPIR-V type %{id} is void, which has no size")),
        })
    }

    fn kernel_arg(&self, kernel: &str, index: usize, param_type: u32, param: u32) -> Result<ArgKind> {
        Ok(match self.ty(param_type)? {
            Type::Pointer { storage, pointee } => match *storage {
                SC_CROSS_WORKGROUP
                | SC_GENERIC
                | SC_UNIFORM_CONSTANT
                | SC_STORAGE_BUFFER
                | SC_PHYSICAL_STORAGE_BUFFER => {
                    if let Type::Opaque(what) = self.ty(*pointee)? {
                        return Err(err!(
                            UnsupportedFeature,
                            "argument {index} of kernel `{kernel}` is {what}; only pointers and values are supported"
                        ));
                    }
                    ArgKind::Global
                }
                SC_WORKGROUP => ArgKind::Local,
                SC_FUNCTION if self.is_by_val(param) => ArgKind::Value(self.layout(*pointee, 0)?.0 as usize),
                other => {
                    return Err(err!(
                        UnsupportedFeature,
                        "argument {index} of kernel `{kernel}` is a pointer to storage class {other}"
                    ));
                }
            },
            Type::Opaque(what) => {
                return Err(err!(
                    UnsupportedFeature,
                    "argument {index} of kernel `{kernel}` is {what}; only pointers and values are supported"
                ));
            }
            _ => ArgKind::Value(self.layout(param_type, 0)?.0 as usize),
        })
    }

    fn is_by_val(&self, param: u32) -> bool {
        self.by_val.contains(&param)
    }

    /// The required work-group size of `entry`: a `LocalSize` mode, or a
    /// `LocalSizeId` / `WorkgroupSize` built-in of plain constants. Sizes left
    /// to specialization constants are no requirement.
    fn required_size(&self, entry: u32) -> Result<Option<[usize; 3]>> {
        let builtin = self.composites.iter().find(|(id, _)| {
            self.decorations.get(&(**id, DEC_BUILT_IN)).is_some_and(|b| b.first() == Some(&BUILT_IN_WORKGROUP_SIZE))
        });
        let ids = match (builtin, self.local_size.get(&entry)) {
            (Some((_, (parts, spec))), _) => {
                if *spec || parts.iter().any(|p| self.constants.get(p).is_some_and(|c| c.1)) {
                    return Ok(None);
                }
                parts.clone()
            }
            (None, Some(ids)) => ids.iter().flatten().copied().collect(),
            (None, None) => {
                return Ok(self.local_size_fixed.get(&entry).map(|s| s.map(|v| v as usize)));
            }
        };
        ensure!(ids.len() == 3, InvalidBinary, "a work-group size has {} components", ids.len());
        if ids.iter().any(|id| self.constants.get(id).is_some_and(|c| c.1)) {
            return Ok(None);
        }
        let mut size = [0; 3];
        for (s, id) in size.iter_mut().zip(&ids) {
            *s = self.constant(*id)? as usize;
        }
        Ok(Some(size))
    }

    fn kernel_signature(&self, func: u32, name: &str) -> Result<KernelSignature> {
        let params =
            self.params.get(&func).ok_or_else(|| err!(InvalidBinary, "entry point `{name}` has no function body"))?;
        let args = params
            .iter()
            .enumerate()
            .map(|(i, (ty, id))| self.kernel_arg(name, i, *ty, *id))
            .collect::<Result<Vec<_>>>()?;
        Ok(KernelSignature::new(name.to_string(), args))
    }

    /// The arguments of a compute shader, from its argument block.
    fn compute_signature(&self, name: &str) -> Result<KernelSignature> {
        ensure!(
            self.push_constants.len() <= 1,
            InvalidBinary,
            "compute shader `{name}` has {} push-constant blocks; the kernel ABI has one, the argument block's address",
            self.push_constants.len()
        );
        let locals: HashSet<u32> =
            self.spec_ids.iter().filter(|id| **id >= LOCAL_SPEC_BASE).map(|id| id - LOCAL_SPEC_BASE).collect();
        // A shader that reads no argument block has its push constant
        // optimized away: its only arguments are local memory.
        let (args_block, members) = match self.push_constants.first() {
            Some(var_type) => {
                let block = self.pointee(*var_type, SC_PUSH_CONSTANT, name, "its push constant")?;
                let Type::Struct { members } = self.ty(block)? else {
                    return Err(err!(InvalidBinary, "the push constant of `{name}` is not a block"));
                };
                let first =
                    *members.first().ok_or_else(|| err!(InvalidBinary, "the push constant of `{name}` is empty"))?;
                let args_block =
                    self.pointee(first, SC_PHYSICAL_STORAGE_BUFFER, name, "the push constant's first member")?;
                let Type::Struct { members } = self.ty(args_block)? else {
                    return Err(err!(InvalidBinary, "the argument block of `{name}` is not a structure"));
                };
                (args_block, members.as_slice())
            }
            None => (0, &[][..]),
        };
        let mut values = Vec::new();
        for (i, m) in members.iter().enumerate() {
            let offset = self.member_offsets.get(&(args_block, i as u32)).copied().ok_or_else(|| {
                err!(InvalidBinary, "member {i} of the argument block of `{name}` has no Offset decoration")
            })?;
            if offset < BLOCK_HEADER {
                continue;
            }
            let kind = match self.ty(*m)? {
                Type::Pointer { storage: SC_PHYSICAL_STORAGE_BUFFER, .. } => ArgKind::Global,
                _ => ArgKind::Value(self.layout(*m, 0)?.0 as usize),
            };
            values.push((offset, kind));
        }
        let total = values.len() + locals.len();
        for l in &locals {
            ensure!(
                (*l as usize) < total,
                InvalidBinary,
                "`{name}` has a local-memory size constant {} for argument {l}, beyond its {total} arguments",
                l + LOCAL_SPEC_BASE
            );
        }
        let mut args = Vec::with_capacity(total);
        let mut next = values.into_iter();
        let mut at = BLOCK_HEADER;
        for i in 0..total as u32 {
            if locals.contains(&i) {
                args.push(ArgKind::Local);
                continue;
            }
            let (offset, kind) = next.next().expect("one block member per non-local argument");
            // The adapter writes each argument where the ABI puts it; a block
            // laid out otherwise would read garbage.
            let (size, align) = match kind {
                ArgKind::Value(n) => (n as u64, if n > 8 { 16 } else { 8 }),
                _ => (8, 8),
            };
            at = at.next_multiple_of(align);
            ensure!(
                offset == at,
                InvalidBinary,
                "argument {i} of `{name}` is at offset {offset} of its argument block; the kernel ABI puts it at {at}"
            );
            at += size;
            args.push(kind);
        }
        Ok(KernelSignature::new(name.to_string(), args))
    }

    fn pointee(&self, ty: u32, storage: u32, name: &str, what: &str) -> Result<u32> {
        match self.ty(ty)? {
            Type::Pointer { storage: s, pointee } if *s == storage => Ok(*pointee),
            _ => Err(err!(
                InvalidBinary,
                "{what} in `{name}` is not a pointer of storage class {storage} as the kernel ABI has it"
            )),
        }
    }
}

/// The entry points of a SPIR-V module (`Kernel` and `GLCompute` ones) and
/// their signatures. A module of the OpenCL memory model may have none: a
/// library of functions for other modules to link with (libsycl's device
/// libraries). `InvalidBinary` when the bytes are not a readable module, or
/// another module has no such entry point; `UnsupportedFeature` for
/// arguments this project cannot pass (images, samplers, ...).
pub fn entry_points(bytes: &[u8]) -> Result<Vec<EntryPoint>> {
    let words = words(bytes)?;
    let module = Module::parse(&words)?;
    let mut out: Vec<EntryPoint> = Vec::new();
    for (model, func, name) in &module.entries {
        let model = match *model {
            MODEL_KERNEL => ExecutionModel::Kernel,
            MODEL_GL_COMPUTE => ExecutionModel::GlCompute,
            _ => continue,
        };
        ensure!(
            !out.iter().any(|e| e.signature.name == *name),
            InvalidBinary,
            "the module has two entry points named `{name}`"
        );
        let mut signature = match model {
            ExecutionModel::Kernel => module.kernel_signature(*func, name)?,
            ExecutionModel::GlCompute => module.compute_signature(name)?,
        };
        signature.reqd_work_group_size = module.required_size(*func)?;
        signature.max_work_group_size = module.max_size.get(func).copied();
        signature.reqd_sub_group_size = module.sub_group_size.get(func).copied();
        signature.reqd_num_sub_groups = module.sub_groups.get(func).copied();
        out.push(EntryPoint { model, signature });
    }
    ensure!(
        !out.is_empty() || module.opencl_memory,
        InvalidBinary,
        "the SPIR-V module has no Kernel or GLCompute entry point, and is no OpenCL library to link"
    );
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(words: &[u32]) -> Vec<u8> {
        words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    #[test]
    fn rejects_what_is_not_spirv() {
        assert!(matches!(entry_points(b"hello world, not spirv!!"), Err(crate::UrError::InvalidBinary(_))));
        assert!(matches!(entry_points(&[1, 2, 3]), Err(crate::UrError::InvalidBinary(_))));
        // A header with a truncated instruction.
        let mut w = vec![MAGIC, 0x0001_0000, 0, 10, 0];
        w.push(4 << 16 | OP_ENTRY_POINT);
        assert!(matches!(entry_points(&bytes(&w)), Err(crate::UrError::InvalidBinary(_))));
        // A valid header without entry points.
        let w = [MAGIC, 0x0001_0000, 0, 10, 0];
        assert!(matches!(entry_points(&bytes(&w)), Err(crate::UrError::InvalidBinary(_))));
        // Without entry points, of the GLSL450 memory model (Logical addressing).
        let w = [MAGIC, 0x0001_0000, 0, 10, 0, 3 << 16 | OP_MEMORY_MODEL, 0, 1];
        assert!(matches!(entry_points(&bytes(&w)), Err(crate::UrError::InvalidBinary(_))));
    }

    #[test]
    fn an_opencl_library_has_no_entry_point() {
        // `OpMemoryModel Physical64 OpenCL` and no entry point: a module of
        // functions for others to link with.
        let w = [MAGIC, 0x0001_0000, 0, 10, 0, 3 << 16 | OP_MEMORY_MODEL, 2, MEMORY_MODEL_OPENCL];
        assert!(entry_points(&bytes(&w)).unwrap().is_empty());
        let bundle = crate::ProgramBundle::from_il(&bytes(&w)).unwrap();
        assert!(bundle.signatures().is_empty());
        assert!(bundle.source_of(crate::SourceForm::SpirvKernel).is_some(), "an OpenCL library is built from its IL");
    }

    fn signature(entries: &[EntryPoint], name: &str) -> KernelSignature {
        entries.iter().find(|e| e.signature.name == name).expect(name).signature.clone()
    }

    #[test]
    fn reads_opencl_kernels() {
        let entries = entry_points(include_bytes!("../../../conformance/src/kernels/programs/opencl.spv")).unwrap();
        assert_eq!(entries.len(), 3);
        assert!(entries.iter().all(|e| e.model == ExecutionModel::Kernel));
        let k = signature(&entries, "scale_add");
        // Two pointers, a float, a by-value struct of 8 bytes, a ulong.
        assert_eq!(
            k.args,
            vec![ArgKind::Global, ArgKind::Global, ArgKind::Value(4), ArgKind::Value(8), ArgKind::Value(8)]
        );
        assert_eq!(k.reqd_work_group_size, None);
        let k = signature(&entries, "group_sum");
        assert_eq!(k.args, vec![ArgKind::Global, ArgKind::Global, ArgKind::Local]);
        let k = signature(&entries, "fixed_size");
        assert_eq!(k.args, vec![ArgKind::Global]);
        assert_eq!(k.reqd_work_group_size, Some([4, 1, 1]));
    }

    #[test]
    fn reads_compute_shaders() {
        let one = |bytes: &[u8]| {
            let entries = entry_points(bytes).unwrap();
            assert_eq!(entries.len(), 1);
            assert_eq!(entries[0].model, ExecutionModel::GlCompute);
            entries[0].signature.clone()
        };
        let k = one(include_bytes!("../../../conformance/src/kernels/programs/scale_add.spv"));
        assert_eq!(k.name, "scale_add");
        assert_eq!(
            k.args,
            vec![ArgKind::Global, ArgKind::Global, ArgKind::Value(4), ArgKind::Value(8), ArgKind::Value(8)]
        );
        assert_eq!(k.reqd_work_group_size, None, "the local size is left to specialization constants");
        let k = one(include_bytes!("../../../conformance/src/kernels/programs/group_sum.spv"));
        assert_eq!(k.args, vec![ArgKind::Global, ArgKind::Global, ArgKind::Local]);
        let k = one(include_bytes!("../../../conformance/src/kernels/programs/fixed_size.spv"));
        assert_eq!(k.args, vec![ArgKind::Global]);
        assert_eq!(k.reqd_work_group_size, Some([4, 1, 1]));
        // Local arguments first, and a 4-byte value between pointers.
        let k = one(include_bytes!("../../../conformance/src/kernels/vulkan/saxpy_local.spv"));
        assert_eq!(
            k.args,
            vec![ArgKind::Local, ArgKind::Local, ArgKind::Global, ArgKind::Value(4), ArgKind::Global, ArgKind::Global]
        );
    }

    /// Corrupted modules are errors or readings, never panics.
    #[test]
    fn corrupt_modules_do_not_panic() {
        let modules: [&[u8]; 3] = [
            include_bytes!("../../../conformance/src/kernels/programs/opencl.spv"),
            include_bytes!("../../../conformance/src/kernels/programs/scale_add.spv"),
            include_bytes!("../../../conformance/src/kernels/programs/group_sum.spv"),
        ];
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for module in modules {
            for _ in 0..3000 {
                let mut bytes = module.to_vec();
                for _ in 0..(next() % 4 + 1) {
                    let at = 20 + (next() as usize) % (bytes.len() - 20);
                    bytes[at] = next() as u8;
                }
                let _ = entry_points(&bytes);
                let cut = 20 + (next() as usize) % (bytes.len() - 20);
                let _ = entry_points(&bytes[..cut & !3]);
            }
        }
    }

    /// A kernel declaring a maximum work-group size, a sub-group size and a
    /// number of sub-groups (DPC++'s `max_work_group_size` and
    /// `sub_group_size` properties give the first two).
    #[test]
    fn reads_declared_maximum_and_sub_group_size() {
        let op = |opcode: u32, ops: &[u32]| {
            let mut w = vec![((ops.len() as u32 + 1) << 16) | opcode];
            w.extend_from_slice(ops);
            w
        };
        let name = u32::from_le_bytes(*b"k\0\0\0");
        let mut w = vec![MAGIC, 0x0001_0000, 0, 10, 0];
        w.extend(op(OP_ENTRY_POINT, &[MODEL_KERNEL, 3, name]));
        w.extend(op(OP_EXECUTION_MODE, &[3, MODE_MAX_WORKGROUP_SIZE_INTEL, 2, 4, 8]));
        w.extend(op(OP_EXECUTION_MODE, &[3, MODE_SUBGROUP_SIZE, 8]));
        w.extend(op(OP_EXECUTION_MODE, &[3, MODE_SUBGROUPS_PER_WORKGROUP, 2]));
        w.extend(op(OP_TYPE_VOID, &[1]));
        // OpTypeFunction, the function, OpLabel, OpReturn, OpFunctionEnd.
        w.extend(op(33, &[2, 1]));
        w.extend(op(OP_FUNCTION, &[1, 3, 0, 2]));
        w.extend(op(248, &[4]));
        w.extend(op(253, &[]));
        w.extend(op(56, &[]));
        let entries = entry_points(&bytes(&w)).unwrap();
        let k = signature(&entries, "k");
        assert_eq!(k.args, vec![]);
        assert_eq!(k.max_work_group_size, Some([2, 4, 8]));
        assert_eq!(k.reqd_sub_group_size, Some(8));
        assert_eq!(k.reqd_num_sub_groups, Some(2));
        assert_eq!(k.reqd_work_group_size, None);
        // Without the modes: nothing declared.
        let entries = entry_points(include_bytes!("../../../conformance/src/kernels/programs/opencl.spv")).unwrap();
        let k = signature(&entries, "scale_add");
        assert_eq!((k.max_work_group_size, k.reqd_sub_group_size, k.reqd_num_sub_groups), (None, None, None));
    }

    #[test]
    fn big_endian_modules_are_read() {
        let w = [MAGIC, 0x0001_0000, 0, 10, 0];
        let be: Vec<u8> = w.iter().flat_map(|w| w.to_be_bytes()).collect();
        assert_eq!(words(&be).unwrap(), w.to_vec());
    }
}
