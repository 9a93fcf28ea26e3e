"""How many real-time voice sessions one worker sustains."""
