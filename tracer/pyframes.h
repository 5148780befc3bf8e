/* SPDX-License-Identifier: MIT */
/*
 * pyframes.h - the Python frames of the calling thread, read from the CPython interpreter
 * that runs in the process (when there is one), for the call sites of a trace.
 *
 * Nothing is linked against: the interpreter's C API is looked up with dlsym(RTLD_DEFAULT)
 * the first time it is wanted, and when it is not there (the program is not a Python
 * interpreter, or one older than 3.9) every later call returns at once.  Only a thread
 * Python knows (it has a thread state) while the interpreter is initialised and not
 * finalising has frames to read.  Reading takes the GIL: a thread that holds it reads at
 * once; one that released it (a ctypes call, an extension's native work) reads only when its
 * caller allows the GIL to be taken (trc_py_capture's take_gil), since waiting for the GIL
 * while holding a lock that the GIL's holder waits for would deadlock the program.
 */
#ifndef ELIXIR_TRACE_PYFRAMES_H
#define ELIXIR_TRACE_PYFRAMES_H

#include <stdint.h>

#define TRC_PY_DEPTH 32                /* Python frames read at most */

/* One Python frame.  file and func stay valid for the life of the process when key is not
 * 0 (the code object is kept alive, and key, its address, is never reused); when key is 0
 * (the table of kept code objects is full) only until the thread returns to Python. */
typedef struct trc_pyraw {
    const char *file, *func;
    uint32_t line;                     /* 0: not known */
    uintptr_t key;
} trc_pyraw_t;

/* The calling thread, as trc_py_thread sees it. */
enum {
    TRC_PY_NONE = 0,                   /* no Python here: not CPython, not initialised, a
                                        * thread without a thread state, or finalising */
    TRC_PY_HELD = 1,                   /* a Python thread holding the GIL */
    TRC_PY_RELEASED = 2,               /* a Python thread that released the GIL */
};

/* The state of the calling thread (TRC_PY_*).  The first call looks up the interpreter;
 * without one, every call costs one load. */
int trc_py_thread(void);

/* Fills out with the calling thread's Python frames, innermost first, at most max (capped
 * at TRC_PY_DEPTH): the count, 0 when there are none or the thread is TRC_PY_NONE, or when it
 * is TRC_PY_RELEASED and take_gil is 0.  With take_gil, a thread that released the GIL takes
 * it back for the read (PyGILState_Ensure) and releases it again: the caller must hold no
 * lock that a thread holding the GIL may wait for.  The interpreter's error indicator is
 * left as it was.  May run Python code (the garbage collector, when reading allocates a
 * frame object), so the caller must hold no lock it could want again. */
int trc_py_capture(trc_pyraw_t *out, int max, int take_gil);

/* Whether return address pc lies in libffi, i.e. the function it called was called by
 * ctypes straight from Python, with no native code of the program in between that could
 * hold a lock. */
int trc_py_ffi_caller(const void *pc);

#endif
