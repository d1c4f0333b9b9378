// Allocation failure inside the compiled searches (decoder._ext._chart and its subclasses, _kbest): an
// error for the sentence, never an ignored exception. Included by chart_containers.hh and
// kbest_containers.hh, after Python.h (Cython includes that first).
//
// The searches run without the GIL in Cython functions declared noexcept: no Python exception can leave
// them. Cython turns a C++ exception thrown by a container call it declares `except +` (std::vector's
// push_back, resize, ...) into a Python exception at that call, which a noexcept function can only print
// ("Exception ignored in ...") before carrying on with the allocation undone, failing again at the next
// one. So a search's entry point brackets its nogil part with cky_search_begin / cky_search_end (which
// mark the thread as searching, in its Python thread-state dict, which every module sees) and calls it
// through CKY_GUARDED; while the mark is set, the conversion below (Cython's __Pyx_CppExn2PyErr, which a
// header may replace) re-throws the C++ exception instead, so that it unwinds through the search (nogil
// Cython code holds no Python references) to CKY_GUARDED, which returns CKY_SEARCH_NO_MEMORY (or
// CKY_SEARCH_FAILED) for the entry point to raise MemoryError under the GIL. A C++ exception that Cython
// does not catch (the containers' own allocations: cky_append, the hash maps' growth) reaches CKY_GUARDED
// directly. The containers stay valid (std::vector's strong guarantee); the next sentence resets them.
#ifndef CKY_SEARCH_ERRORS_HH
#define CKY_SEARCH_ERRORS_HH

#include <Python.h>

#include <ios>
#include <new>
#include <stdexcept>
#include <typeinfo>

static const char CKY_SEARCH_MARK[] = "decoder._ext.searching";

enum { CKY_SEARCH_OK = 0, CKY_SEARCH_NO_MEMORY = 1, CKY_SEARCH_FAILED = 2 };

/* Mark (or unmark) this thread as running a guarded search; the GIL held. */
static inline void cky_search_mark(int on) {
    PyObject *state = PyThreadState_GetDict();
    if (state == NULL) return;
    if (on) {
        if (PyDict_SetItemString(state, CKY_SEARCH_MARK, Py_True) < 0) PyErr_Clear();
    } else if (PyDict_GetItemString(state, CKY_SEARCH_MARK) != NULL) {
        if (PyDict_DelItemString(state, CKY_SEARCH_MARK) < 0) PyErr_Clear();
    }
}
static inline void cky_search_begin() { cky_search_mark(1); }
static inline void cky_search_end() { cky_search_mark(0); }

/* Cython's conversion of the C++ exception being handled to a Python exception (called inside its catch
   block, the GIL held: taken for the conversion when the code runs without it). In a guarded search (the
   thread marked, so the code runs without the GIL: Cython took it for this call) the GIL is given back
   and the exception re-thrown to CKY_GUARDED. */
static void cky_cpp_exception_to_python() {
    PyObject *state = PyThreadState_GetDict();
    if (!PyErr_Occurred() && state != NULL && PyDict_GetItemString(state, CKY_SEARCH_MARK) != NULL) {
        PyGILState_Release(PyGILState_UNLOCKED);
        throw;
    }
    try {
        if (PyErr_Occurred())
            ;  // the latest Python exception stands (as Cython's own conversion does)
        else
            throw;
    } catch (const std::bad_alloc &exn) {
        PyErr_SetString(PyExc_MemoryError, exn.what());
    } catch (const std::bad_cast &exn) {
        PyErr_SetString(PyExc_TypeError, exn.what());
    } catch (const std::bad_typeid &exn) {
        PyErr_SetString(PyExc_TypeError, exn.what());
    } catch (const std::domain_error &exn) {
        PyErr_SetString(PyExc_ValueError, exn.what());
    } catch (const std::invalid_argument &exn) {
        PyErr_SetString(PyExc_ValueError, exn.what());
    } catch (const std::ios_base::failure &exn) {
        PyErr_SetString(PyExc_IOError, exn.what());
    } catch (const std::out_of_range &exn) {
        PyErr_SetString(PyExc_IndexError, exn.what());
    } catch (const std::overflow_error &exn) {
        PyErr_SetString(PyExc_OverflowError, exn.what());
    } catch (const std::range_error &exn) {
        PyErr_SetString(PyExc_ArithmeticError, exn.what());
    } catch (const std::underflow_error &exn) {
        PyErr_SetString(PyExc_ArithmeticError, exn.what());
    } catch (const std::exception &exn) {
        PyErr_SetString(PyExc_RuntimeError, exn.what());
    } catch (...) {
        PyErr_SetString(PyExc_RuntimeError, "Unknown exception");
    }
}
#define __Pyx_CppExn2PyErr cky_cpp_exception_to_python

/* Run a nogil search step (an int expression) and report how it ended: CKY_SEARCH_OK, or the C++
   exception that left it. A macro, so that Cython places the call itself inside the try. */
template <class F> static inline int cky_guarded_call(F run) {
    try {
        run();
        return CKY_SEARCH_OK;
    } catch (const std::bad_alloc &) {
        return CKY_SEARCH_NO_MEMORY;
    } catch (...) {
        return CKY_SEARCH_FAILED;
    }
}
#define CKY_GUARDED(call) cky_guarded_call([&]() { return (call); })

#endif  // CKY_SEARCH_ERRORS_HH
