"""The ground every layer stands on: the shared types (replies, commands, tools, progress steps,
chat ids) that features, the agent loop, the core and the channels exchange, importing nothing
above them."""
