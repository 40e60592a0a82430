"""The channel-agnostic heart: one message for one chat in, one `Reply` out (`assistant`)."""
