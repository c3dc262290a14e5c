"""Tensors through DLPack: numpy arrays pass to native functions without copies."""

import numpy as np

import rffi

a = np.arange(12, dtype=np.float32).reshape(3, 4)
t = rffi.from_dlpack(a)  # zero copy
print(t, "strides", t.strides, "shares memory:", t.data_ptr() == a.ctypes.data)

# A numpy array is accepted directly as an argument.
print("testing.tensor_shape(a) =", rffi.get_global_func("testing.tensor_shape")(a))

# And back: numpy sees the same memory.
b = np.from_dlpack(rffi.get_global_func("testing.echo")(t))
b[0, 0] = 100.0
print("after writing through the round trip, a[0, 0] =", a[0, 0])

# A tensor allocated by the runtime, viewed from numpy.
made = rffi.get_global_func("testing.tensor_empty")([2, 2], rffi.dtype("int32"), rffi.device("cpu"))
print("runtime-allocated:", made, "->", np.from_dlpack(made).tolist())
