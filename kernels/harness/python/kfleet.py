"""What a Python kernel source may import (kernels/harness/PYTHON.md).

    import kfleet
    def kfleet_attention_launch(args, stream):   # args.q, args.k, args.v, args.o: torch tensors
        ...                                       # enqueue on `stream` (the current stream)
        return kfleet.OK                          # or kfleet.UNSUPPORTED, or None (= OK)

Plain Python: importing it needs no torch.
"""

OK = 0
UNSUPPORTED = 1


class Workspace:
    """Scratch tensors carved from `args.workspace` (the harness's workspace buffer), the same
    every launch: a tensor the launch allocates itself (torch.empty) lives outside the harness's
    buffers and its address is refused at record time, so take scratch from here instead.

        ws = kfleet.Workspace(args.workspace)
        m = ws.take((B, H, S), torch.float32)
    """

    def __init__(self, workspace, align=256):
        self.buf, self.align, self.used = workspace, align, 0

    def take(self, shape, dtype):
        import torch  # the caller has torch; imported here so this module imports without it
        n = 1
        for d in shape:
            n *= int(d)
        itemsize = torch.empty(0, dtype=dtype).element_size()  # on the host: no allocation here
        start = (self.used + self.align - 1) // self.align * self.align
        end = start + n * itemsize
        if end > self.buf.numel():
            raise MemoryError(f"kfleet.Workspace: {end} bytes wanted, the workspace has "
                              f"{self.buf.numel()} (job option --workspace-mib)")
        self.used = end
        return self.buf[start:end].view(dtype).view(tuple(int(d) for d in shape))

    def triton_allocator(self):
        """For triton.set_allocator: Triton's global scratch (TMA descriptors made on the
        device, say) from the workspace, so its address is one the measuring process maps."""
        import torch

        def alloc(size, alignment, stream):
            self.align = max(self.align, int(alignment))
            return self.take((int(size),), torch.int8)
        return alloc
