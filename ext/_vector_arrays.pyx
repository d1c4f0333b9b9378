"""Copies of C++ vectors into new numpy arrays (one memcpy each), cimported by the compiled
modules that build columns in vectors (_rule_reader, _rule_binarizer)."""
from libc.stdint cimport int32_t, int64_t, uint8_t
from libc.string cimport memcpy
from libcpp.vector cimport vector

import numpy as np


cdef object int32_array(vector[int32_t]& values):
    out = np.empty(values.size(), dtype=np.int32)
    cdef int32_t[::1] view = out
    if values.size():
        memcpy(&view[0], values.data(), values.size() * sizeof(int32_t))
    return out


cdef object int64_array(vector[int64_t]& values):
    out = np.empty(values.size(), dtype=np.int64)
    cdef int64_t[::1] view = out
    if values.size():
        memcpy(&view[0], values.data(), values.size() * sizeof(int64_t))
    return out


cdef object float64_array(vector[double]& values):
    out = np.empty(values.size(), dtype=np.float64)
    cdef double[::1] view = out
    if values.size():
        memcpy(&view[0], values.data(), values.size() * sizeof(double))
    return out


cdef object uint8_array(vector[uint8_t]& values):
    out = np.empty(values.size(), dtype=np.uint8)
    cdef uint8_t[::1] view = out
    if values.size():
        memcpy(&view[0], values.data(), values.size() * sizeof(uint8_t))
    return out
