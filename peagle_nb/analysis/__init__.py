"""Pure analysis of decoding runs: acceptance metrics, repetition, a step's phases, worked examples."""
