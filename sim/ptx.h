/* SPDX-License-Identifier: MIT */
/*
 * ptx.h - reading kernel images for the simulator.
 *
 * An image handed to cuModuleLoadData/cuLibraryLoadData is PTX text, or a fatbin container
 * holding uncompressed PTX.  The simulator needs from it only the kernel entry points with
 * the layout of their parameters, and the module-scope .global variables (cuModuleGetGlobal).
 * Nothing here touches CUDA state: text in, tables out.
 */
#ifndef SIM_PTX_H
#define SIM_PTX_H

#include <stddef.h>
#include <stdint.h>

typedef struct sim_ptx_param {
    uint32_t offset;    /* byte offset in the packed argument buffer (aligned) */
    uint32_t size;      /* bytes */
    uint32_t align;     /* alignment in bytes (1, 2, 4, 8, 16, ...) */
} sim_ptx_param_t;

typedef struct sim_ptx_entry {
    char *name;                 /* .entry name (malloc'd) */
    uint32_t nparams;
    sim_ptx_param_t *params;    /* nparams entries (malloc'd, may be NULL when 0) */
    uint32_t args_size;         /* total packed size: last offset + size, rounded to max align */
    uint32_t params_end;        /* last offset + size: the size an `extra` buffer must have */
} sim_ptx_entry_t;

typedef struct sim_ptx_global {
    char *name;                 /* variable name (malloc'd) */
    uint64_t size;              /* bytes (element size x array length) */
    uint32_t align;
    unsigned char *init;        /* size bytes of initial value, or NULL for zero */
} sim_ptx_global_t;

typedef struct sim_ptx_module {
    uint32_t nentries;
    sim_ptx_entry_t *entries;
    uint32_t nglobals;
    sim_ptx_global_t *globals;
} sim_ptx_module_t;

/*
 * Parse PTX text of `len` bytes.  Returns 0 and fills *out, or a negative errno (-EINVAL for
 * malformed text, -ENOMEM) and writes a one-line reason with the line number into err.
 * Only the declarations are read; instruction bodies are skipped.
 */
int sim_ptx_parse(const char *text, size_t len, sim_ptx_module_t *out, char *err, size_t errlen);

/* Release everything sim_ptx_parse allocated; *m is left zeroed. */
void sim_ptx_free(sim_ptx_module_t *m);

enum sim_image_kind {
    SIM_IMAGE_PTX = 1,      /* NUL-terminated PTX text */
    SIM_IMAGE_FATBIN = 2,   /* fatbin container (magic 0xBA55ED50) */
    SIM_IMAGE_ELF = 3,      /* a cubin: machine code the simulator cannot run */
};

/*
 * Locate the PTX text in an image as passed to cuModuleLoadData.  On success returns 0 and
 * sets *ptx (pointing into the image) and *len.  Returns -ENOEXEC for an ELF cubin or a
 * fatbin that holds no PTX, -ENOTSUP for compressed PTX, -EINVAL for anything unrecognised.
 * `kind`, when not NULL, receives the sim_image_kind detected.
 */
int sim_image_ptx(const void *image, const char **ptx, size_t *len, int *kind);

#endif /* SIM_PTX_H */
