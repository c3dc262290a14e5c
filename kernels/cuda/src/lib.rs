//! The CUDA backend of the rffi kernel layer (in progress).
