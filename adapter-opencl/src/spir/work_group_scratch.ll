; The local memory of missing_builtins.cl's work-group collectives: OpenCL C
; declares local variables only in kernels, so the array and its accessor
; (inlined, like the collectives, so that the kernel's body names the array)
; are written in LLVM IR (typed pointers, as llvm-spirv-15 writes them). ITEMS
; is replaced by the device's largest work-group size.
target datalayout = "e-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-v512:512-v1024:1024"
target triple = "spir64-unknown-unknown"

@cmdbuf.work_group_scratch = internal addrspace(3) global [ITEMS x i64] undef, align 8

define spir_func i64 addrspace(3)* @cmdbuf_work_group_scratch() alwaysinline {
  ret i64 addrspace(3)* getelementptr ([ITEMS x i64], [ITEMS x i64] addrspace(3)* @cmdbuf.work_group_scratch, i64 0, i64 0)
}

