"""The recovery app's services, by noun: browsing (reads of a snapshot's folders and a file's versions)."""

from recovery.services.browse import Version, VersionPass, Where, folder_page, parts_of, text_path, versions, where

__all__ = ["Version", "VersionPass", "Where", "folder_page", "parts_of", "text_path", "versions", "where"]
