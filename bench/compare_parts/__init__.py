"""The parts of bench/compare: generic (pools without a database), database (pools on PostgreSQL),
services (HTTP services on PostgreSQL under wrk)."""
