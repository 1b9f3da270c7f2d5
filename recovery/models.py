"""The recovery app keeps no rows yet: what it shows is read from the NAS (a snapshot's files are data, never
copied into Tarn's database)."""
