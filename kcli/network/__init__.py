"""Sockets: the asyncio I/O the broker and the client share, over the sans-I/O ``kcli.protocol``."""
