"""PyTorch -> Relax: ``relax.frontend.torch.from_exported_program`` (placeholder until the
converter module lands)."""
