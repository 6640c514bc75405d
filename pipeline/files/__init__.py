"""Every path ordercube reads or writes: input files opened once, output paths guarded, where a cube lives."""
