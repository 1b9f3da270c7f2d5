"""Sharing: SMB shares, NFS exports, Samba users and the share settings of a host."""
