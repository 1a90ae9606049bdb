"""What compiled code links against at run time: allocators, the CUDA driver."""
