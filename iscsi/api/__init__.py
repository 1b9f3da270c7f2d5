"""iSCSI: zvols served as disks by the kernel's LIO target: targets and their portal, LUNs, the initiators allowed in (CHAP secrets write-only), who is logged in."""
