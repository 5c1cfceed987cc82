"""The Spark engine the verdict runs on: one session per process (local, a Spark Connect
server or a standalone master), finding or starting the machine's shared Connect server,
the driver's class-data archive and JIT, column expressions built once per session."""
