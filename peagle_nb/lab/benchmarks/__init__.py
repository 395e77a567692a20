"""Measurement harnesses: kernels, drafting cost, forward cost by rows, configurations side by side,
acceptance per domain, torch.compile vs the lean engine."""
