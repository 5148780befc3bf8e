/* SPDX-License-Identifier: MIT */
/*
 * pyframes.c - reads the calling thread's Python frames (file, function, line) through the
 * C API of the CPython interpreter running in the process, for call sites (pyframes.h).
 *
 * The API is found with dlsym(RTLD_DEFAULT) on first use: a python3 executable exports it
 * (and a program that embeds libpython with RTLD_GLOBAL does too).  Python 3.9 or later is
 * needed (PyThreadState_GetFrame, PyFrame_GetCode, PyFrame_GetBack); without all of the
 * functions below the process counts as not Python, for good.
 *
 * The names of a code object (co_filename, co_qualname or else co_name) are read once and
 * kept in a table keyed by the object's address, with a reference to the object, so that
 * the address is never reused by another code object and the names stay valid: later reads
 * of the same function cost a look-up.  The table's lock is never held while the
 * interpreter runs (reading a frame may allocate and so run the garbage collector, which
 * may run any Python code, this function again included).
 */
#include "pyframes.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define MAX_KEPT (1u << 16)            /* code objects kept at most */

typedef void *obj_t;                   /* a PyObject * */

static struct {
    int (*is_initialized)(void);
    int (*is_finalizing)(void);        /* optional: _Py_IsFinalizing, Py_IsFinalizing */
    obj_t (*this_tstate)(void);
    int (*gil_check)(void);
    int (*gil_ensure)(void);
    void (*gil_release)(int);
    obj_t (*tstate_frame)(obj_t);
    obj_t (*frame_code)(obj_t);
    obj_t (*frame_back)(obj_t);
    int (*frame_line)(obj_t);
    obj_t (*getattr)(obj_t, const char *);
    const char *(*utf8)(obj_t);
    void (*incref)(obj_t);
    void (*decref)(obj_t);
    void (*err_fetch)(obj_t *, obj_t *, obj_t *);
    void (*err_restore)(obj_t, obj_t, obj_t);
    void (*err_clear)(void);
} py;

static _Atomic int found;              /* 1: the API is there; -1: it is not */
static pthread_once_t find_once = PTHREAD_ONCE_INIT;

/* dlsym into a function pointer of any type; 0 when absent. */
#define FIND(field, name) (*(void **)&py.field = dlsym(RTLD_DEFAULT, name))

static void find_api(void)
{
    int ok = FIND(is_initialized, "Py_IsInitialized") && FIND(this_tstate,
             "PyGILState_GetThisThreadState") && FIND(gil_check, "PyGILState_Check") &&
             FIND(gil_ensure, "PyGILState_Ensure") && FIND(gil_release, "PyGILState_Release") &&
             FIND(tstate_frame, "PyThreadState_GetFrame") &&
             FIND(frame_code, "PyFrame_GetCode") && FIND(frame_back, "PyFrame_GetBack") &&
             FIND(frame_line, "PyFrame_GetLineNumber") &&
             FIND(getattr, "PyObject_GetAttrString") && FIND(utf8, "PyUnicode_AsUTF8") &&
             FIND(incref, "Py_IncRef") && FIND(decref, "Py_DecRef") &&
             FIND(err_fetch, "PyErr_Fetch") && FIND(err_restore, "PyErr_Restore") &&
             FIND(err_clear, "PyErr_Clear");
    if (ok && !FIND(is_finalizing, "Py_IsFinalizing"))
        FIND(is_finalizing, "_Py_IsFinalizing");
    atomic_store_explicit(&found, ok ? 1 : -1, memory_order_release);
}

int trc_py_thread(void)
{
    int f = atomic_load_explicit(&found, memory_order_acquire);
    if (__builtin_expect(f < 0, 1))
        return TRC_PY_NONE;
    if (f == 0) {
        pthread_once(&find_once, find_api);
        if (atomic_load_explicit(&found, memory_order_acquire) < 0)
            return TRC_PY_NONE;
    }
    if (!py.is_initialized() || (py.is_finalizing && py.is_finalizing()))
        return TRC_PY_NONE;
    if (!py.this_tstate())
        return TRC_PY_NONE;
    return py.gil_check() ? TRC_PY_HELD : TRC_PY_RELEASED;
}

/* ------------------------------------------------------------------ the code objects kept */

typedef struct kept {
    obj_t code;                        /* NULL: empty slot */
    const char *file, *func;
} kept_t;

static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;
static kept_t *kept;
static uint32_t kept_cap, kept_count;

static uint32_t hash_ptr(obj_t p)
{
    uint64_t h = (uint64_t)(uintptr_t)p * 0x9e3779b97f4a7c15ull;
    return (uint32_t)(h >> 32);
}

/* The slot of code, or the empty one where it would go (kept_lock held, kept_cap > 0). */
static kept_t *slot_of(kept_t *t, uint32_t cap, obj_t code)
{
    for (uint32_t i = hash_ptr(code) & (cap - 1);; i = (i + 1) & (cap - 1))
        if (!t[i].code || t[i].code == code)
            return &t[i];
}

/* Room for one more (kept_lock held): 0, or -1 when the table is full or out of memory. */
static int make_room(void)
{
    if ((kept_count + 1) * 2 <= kept_cap)
        return 0;
    uint32_t cap = kept_cap ? kept_cap * 2 : 1024;
    if (cap > 2 * MAX_KEPT)
        return -1;
    kept_t *t = calloc(cap, sizeof(*t));
    if (!t)
        return -1;
    for (uint32_t i = 0; i < kept_cap; i++)
        if (kept[i].code)
            *slot_of(t, cap, kept[i].code) = kept[i];
    free(kept);
    kept = t;
    kept_cap = cap;
    return 0;
}

/* A name attribute of code as UTF-8, or NULL (the error cleared); *o gets the object. */
static const char *name_of(obj_t code, const char *attr, obj_t *o)
{
    *o = py.getattr(code, attr);
    const char *s = *o ? py.utf8(*o) : NULL;
    if (!s)
        py.err_clear();
    return s;
}

/* Fills r's names from code (GIL held, no lock held): kept ones, or read and kept. */
static void names(obj_t code, trc_pyraw_t *r)
{
    pthread_mutex_lock(&kept_lock);
    kept_t *k = kept_cap ? slot_of(kept, kept_cap, code) : NULL;
    int hit = k && k->code;
    if (hit)
        *r = (trc_pyraw_t){ k->file, k->func, r->line, (uintptr_t)code };
    pthread_mutex_unlock(&kept_lock);
    if (hit)
        return;
    obj_t fo, qo, no = NULL;
    const char *file = name_of(code, "co_filename", &fo);
    const char *func = name_of(code, "co_qualname", &qo);
    if (!func)
        func = name_of(code, "co_name", &no);
    *r = (trc_pyraw_t){ file ? file : "?", func ? func : "?", r->line, 0 };
    pthread_mutex_lock(&kept_lock);
    int keep = make_room() == 0 && !slot_of(kept, kept_cap, code)->code;
    if (keep) {
        py.incref(code);
        *slot_of(kept, kept_cap, code) = (kept_t){ code, r->file, r->func };
        kept_count++;
        r->key = (uintptr_t)code;
    }
    pthread_mutex_unlock(&kept_lock);
    /* Kept: the name objects stay referenced with the code object's own names (never
     * freed); else released, the code object still holding them for this call. */
    if (!keep) {
        obj_t o[3] = { fo, qo, no };
        for (int i = 0; i < 3; i++)
            if (o[i])
                py.decref(o[i]);
    }
}

static void fork_prepare(void)
{
    pthread_mutex_lock(&kept_lock);
}

static void fork_release(void)
{
    pthread_mutex_unlock(&kept_lock);
}

static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void fork_init(void)
{
    pthread_atfork(fork_prepare, fork_release, fork_release);
}

/* ------------------------------------------------------------------ reading */

/* The frames of thread state ts, innermost first (GIL held). */
static int walk(obj_t ts, trc_pyraw_t *out, int max)
{
    int n = 0;
    obj_t f = py.tstate_frame(ts);
    while (f && n < max) {
        obj_t code = py.frame_code(f);
        int line = py.frame_line(f);
        out[n].line = line > 0 ? (uint32_t)line : 0;
        if (code) {
            names(code, &out[n]);
            py.decref(code);
            n++;
        }
        obj_t back = py.frame_back(f);
        py.decref(f);
        f = back;
    }
    if (f)
        py.decref(f);
    return n;
}

int trc_py_capture(trc_pyraw_t *out, int max, int take_gil)
{
    int state = trc_py_thread();
    if (state == TRC_PY_NONE || (state == TRC_PY_RELEASED && !take_gil) || max <= 0)
        return 0;
    if (max > TRC_PY_DEPTH)
        max = TRC_PY_DEPTH;
    pthread_once(&fork_once, fork_init);
    int g = state == TRC_PY_RELEASED ? py.gil_ensure() : 0;
    obj_t et, ev, etb;
    py.err_fetch(&et, &ev, &etb);
    int n = walk(py.this_tstate(), out, max);
    py.err_restore(et, ev, etb);
    if (state == TRC_PY_RELEASED)
        py.gil_release(g);
    return n;
}

int trc_py_ffi_caller(const void *pc)
{
    Dl_info info;
    if (!pc || !dladdr(pc, &info) || !info.dli_fname)
        return 0;
    const char *base = strrchr(info.dli_fname, '/');
    base = base ? base + 1 : info.dli_fname;
    return strncmp(base, "libffi", 6) == 0 || strncmp(base, "_ctypes", 7) == 0;
}
