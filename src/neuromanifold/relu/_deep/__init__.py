"""Networks of any depth: symmetries per layer and per three-layer window,
identifiability where a proof exists, the canonical form modulo permutation and scaling."""
