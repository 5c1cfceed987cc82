"""What the node facilities attach, one module each: libfaketime, the small and the lazy
filesystems, the link proxy, the remote tier, and the helpers they share."""
