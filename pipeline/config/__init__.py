"""The study config: YAML in, validated frozen specs out (datasets, methods, adaptive rule, limits)."""
