"""`tape verify`: prove a tape replays, byte for byte, with the world unreachable (DESIGN §3)."""
