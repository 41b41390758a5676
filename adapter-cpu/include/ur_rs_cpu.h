/*
 * ur_rs_cpu.h - C kernels for the cmdbuf CPU adapter.
 *
 * The CPU adapter runs kernels that are host functions. From C, a program is
 * a kernel table: fill in a ur_rs_cpu_table_t and pass its bytes as the
 * binary of urProgramCreateWithBinary (or cmdbuf_core's ProgramBundle::from_binary):
 *
 *     ur_rs_cpu_table_t table = {UR_RS_CPU_MAGIC, UR_RS_CPU_VERSION, 1, 0, kernels};
 *     urProgramCreateWithBinary(ctx, dev, sizeof(table), (const uint8_t *)&table, NULL, &prog);
 *
 * The table is read when the program is created: its kernel names and argument
 * descriptions are copied, but the entry points are called for as long as the
 * program or its kernels live, so they must stay loaded. The bytes only mean
 * something in the process that made them (they hold pointers).
 *
 * A kernel is called once per work-group, on any worker thread, possibly
 * concurrently with other groups of the same launch. It loops over the
 * group's work-items itself; a work-group barrier is the end of one loop and
 * the start of the next. args[i] points to argument i:
 *   - UR_RS_CPU_ARG_GLOBAL: to a void * holding the pointer (USM pointer or
 *     memory buffer; null allowed), so read it as *(float **)args[i];
 *   - UR_RS_CPU_ARG_VALUE: to the value's `size` bytes (not aligned: copy them
 *     out with memcpy unless the type's alignment is 1);
 *   - UR_RS_CPU_ARG_LOCAL: to this group's local memory for the argument
 *     (64-byte aligned, of the size given at launch, private to the group for
 *     the call).
 * A kernel returns 0, or a non-zero code that fails the launch: its event
 * reports UR_RESULT_ERROR_ADAPTER_SPECIFIC with that code (other groups still run).
 *
 * Global ids follow OpenCL: global id = group_id * local_size + local id +
 * global_offset, per dimension.
 */
#ifndef UR_RS_CPU_H
#define UR_RS_CPU_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The table's first four bytes (native byte order). */
#define UR_RS_CPU_MAGIC 0x55524350u
/* The layout described by this header. */
#define UR_RS_CPU_VERSION 1u

/* Argument kinds. */
#define UR_RS_CPU_ARG_GLOBAL 0u
#define UR_RS_CPU_ARG_VALUE 1u
#define UR_RS_CPU_ARG_LOCAL 2u

/* One work-group of a launch. Unused dimensions have size 1 and offset 0. */
typedef struct ur_rs_cpu_group_t {
    uint32_t work_dim;        /* 1 to 3 */
    size_t group_id[3];       /* this group's id */
    size_t num_groups[3];     /* groups of the launch */
    size_t local_size[3];     /* work-items per group */
    size_t global_size[3];    /* work-items of the launch */
    size_t global_offset[3];  /* the launch's global offset */
} ur_rs_cpu_group_t;

/* A kernel entry point: called once per work-group; 0 on success. */
typedef int32_t (*ur_rs_cpu_kernel_fn)(const ur_rs_cpu_group_t *group, void *const *args);

/* One argument: its kind, and for a value its size in bytes (non-zero). */
typedef struct ur_rs_cpu_arg_t {
    uint32_t kind;
    uint32_t size;
} ur_rs_cpu_arg_t;

/* One kernel. */
typedef struct ur_rs_cpu_kernel_t {
    const char *name;                /* NUL-terminated UTF-8, unique in the table */
    ur_rs_cpu_kernel_fn entry;       /* non-null */
    uint32_t num_args;
    uint32_t reserved;               /* 0 */
    const ur_rs_cpu_arg_t *args;     /* num_args entries (may be null when 0) */
    size_t reqd_work_group_size[3];  /* the required local size, or all 0 for none */
} ur_rs_cpu_kernel_t;

/* The table: what urProgramCreateWithBinary's bytes are. */
typedef struct ur_rs_cpu_table_t {
    uint32_t magic;                     /* UR_RS_CPU_MAGIC */
    uint32_t version;                   /* UR_RS_CPU_VERSION */
    uint32_t num_kernels;               /* at least 1 */
    uint32_t reserved;                  /* 0 */
    const ur_rs_cpu_kernel_t *kernels;  /* num_kernels entries */
} ur_rs_cpu_table_t;

#ifdef __cplusplus
}
#endif

#endif /* UR_RS_CPU_H */
