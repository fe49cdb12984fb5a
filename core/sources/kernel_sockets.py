"""Which local process holds a TCP connection to a server: the kernel's word.

An engine's records in Redis can say anything (whoever writes to that Redis chooses them), but a
process cannot hold a socket that it did not open or inherit. So a connection that Redis lists
(``CLIENT LIST``'s ``addr``) is matched to the process on this host that holds its socket.
"""

from __future__ import annotations

import ipaddress

import psutil


def split_addr(addr: str) -> tuple[str, int] | None:
    """``127.0.0.1:5555`` or ``[::1]:5555`` as (host, port); None when it does not read."""
    host, _, port = addr.rpartition(":")
    if not port.isdigit():
        return None
    host = host.strip("[]")
    try:
        return _ip(host), int(port)
    except ValueError:
        return None


def socket_owners(server_port: int | None) -> dict[tuple[str, int], int]:
    """By local address, the process of each TCP socket on this host connected to a port
    ``server_port`` (Redis's): the kernel's word, which nobody writing to Redis can change.
    Processes of other users are left out where this user cannot read them."""
    found: dict[tuple[str, int], int] = {}
    try:
        connections = psutil.net_connections(kind="tcp")
    except psutil.Error:
        return found
    for conn in connections:
        if conn.pid is None or not conn.raddr or not conn.laddr:
            continue
        if server_port is not None and conn.raddr.port != server_port:
            continue
        found[(_ip(conn.laddr.ip), conn.laddr.port)] = conn.pid
    return found


def process_sockets(pid: int) -> set[tuple[str, int]]:
    """The local addresses of the TCP sockets ``pid`` holds; none when it cannot be read."""
    try:
        connections = psutil.Process(pid).net_connections(kind="tcp")
    except psutil.Error:
        return set()
    return {(_ip(conn.laddr.ip), conn.laddr.port) for conn in connections if conn.laddr}


def _ip(host: str) -> str:
    """An IP address as Redis writes it: an IPv4 address mapped into IPv6 as IPv4."""
    found = ipaddress.ip_address(host)
    if isinstance(found, ipaddress.IPv6Address) and found.ipv4_mapped is not None:
        return str(found.ipv4_mapped)
    return str(found)
