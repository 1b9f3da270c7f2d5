"""Capacity forecasts: when each pool and dataset reaches 80 %, 90 % and full at its growth, and the series they are made from."""
