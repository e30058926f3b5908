"""The admission engine: plain data and pure functions, no I/O, no asyncio, no clock reads."""
