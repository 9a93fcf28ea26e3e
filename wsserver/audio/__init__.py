"""Input audio: voice-activity detection and turn detection."""
