"""Copies of C++ vectors into new numpy arrays (one memcpy each), cimported by the compiled
modules that build columns in vectors (_rule_reader, _rule_binarizer)."""
from libc.stdint cimport int32_t, int64_t, uint8_t
from libc.string cimport memcpy
from libcpp.vector cimport vector

import numpy as np


cdef object _copy(const void *data, size_t count, object dtype):
    """A new 1-d array of `count` elements of `dtype` holding the bytes at `data`."""
    out = np.empty(count, dtype=dtype)
    cdef uint8_t[::1] raw = out.view(np.uint8)
    if count:
        memcpy(&raw[0], data, raw.shape[0])
    return out


cdef object int32_array(vector[int32_t]& values):
    return _copy(values.data(), values.size(), np.int32)


cdef object int64_array(vector[int64_t]& values):
    return _copy(values.data(), values.size(), np.int64)


cdef object float64_array(vector[double]& values):
    return _copy(values.data(), values.size(), np.float64)


cdef object uint8_array(vector[uint8_t]& values):
    return _copy(values.data(), values.size(), np.uint8)
