# Copies of C++ vectors into new numpy arrays: the one home of the conversion the compiled
# readers and kernels use to hand their integer columns to Python (ext/_vector_arrays.pyx).
from libc.stdint cimport int32_t, int64_t, uint8_t
from libcpp.vector cimport vector

cdef object int32_array(vector[int32_t]& values)
cdef object int64_array(vector[int64_t]& values)
cdef object float64_array(vector[double]& values)
cdef object uint8_array(vector[uint8_t]& values)
