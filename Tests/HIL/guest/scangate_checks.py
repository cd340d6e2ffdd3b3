"""Phase 2: the scangate binary, exactly as users run it, against the same drivers."""
