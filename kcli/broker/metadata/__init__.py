"""The broker's view of the cluster metadata: the cache (``metadata_cache``), the one thread for
the tree (``metadata_thread``) and the admin requests written through it (``zk_admin_manager``)."""
