"""What both sides of a search stand on; it imports neither side, nor Ray, nor torch."""
