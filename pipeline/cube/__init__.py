"""The cube on disk: its grid, its description, its integrity, its lock, its object-store growth."""
