"""What this process runs with: its cores, its signals, the compiled-kernel cache, the library versions."""
