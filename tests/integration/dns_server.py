"""A tiny real DNS server for the network tests (stdlib only): it answers A and AAAA questions
from a table, over UDP and TCP, with TTL 0, counts every question it is asked, and can give a
name one answer the first time and another after (a rebinding name). Only what glibc's stub
resolver sends is understood: one question per message; anything else is FORMERR."""
import ipaddress
import socket
import socketserver
import struct
import threading

A, AAAA = 1, 28
SILENT = object()  # Table.answer's word for "send nothing back"
TYPE_NAMES = {A: "A", AAAA: "AAAA"}


class Table:
    """name -> {"A": [addresses], "AAAA": [addresses]}; a name in `rebind` answers its first
    table for the first question of each type and its second for every later one."""

    def __init__(self):
        self.lock = threading.Lock()
        self.names = {}
        self.rebind = {}   # name -> (first, after), each {"A": [...], "AAAA": [...]}
        self.silent = set()  # names whose questions get no answer at all
        self.asked = []    # (name, "A" | "AAAA" | number, "udp" | "tcp"), in order

    def set(self, name, a=(), aaaa=()):
        with self.lock:
            self.names[name.lower()] = {"A": list(a), "AAAA": list(aaaa)}

    def set_silent(self, name):
        with self.lock:
            self.silent.add(name.lower())

    def set_rebinding(self, name, first, after):
        with self.lock:
            self.rebind[name.lower()] = (first, after)

    def questions(self, name, kind=None):
        """How many questions for name (of kind, "A" or "AAAA", when given) came in."""
        with self.lock:
            return sum(1 for n, k, _ in self.asked if n == name.lower() and kind in (None, k))

    def answer(self, name, qtype, transport):
        """The addresses for (name, qtype), None for a name it does not know, or SILENT."""
        name = name.lower()
        kind = TYPE_NAMES.get(qtype, qtype)
        with self.lock:
            before = sum(1 for n, k, _ in self.asked if n == name and k == kind)
            self.asked.append((name, kind, transport))
            if name in self.silent:
                return SILENT
            if name in self.rebind:
                first, after = self.rebind[name]
                return list((first if before == 0 else after).get(kind, []))
            if name in self.names:
                return list(self.names[name].get(kind, []))
            return None


def parse_question(msg):
    """(id, flags, name, qtype, end of the question) of a query, or None."""
    if len(msg) < 12:
        return None
    qid, flags, qdcount = struct.unpack("!HHH", msg[:6])
    if flags & 0x8000 or qdcount != 1:
        return None
    labels, i = [], 12
    while True:
        if i >= len(msg):
            return None
        n = msg[i]
        i += 1
        if n == 0:
            break
        if n & 0xC0 or i + n > len(msg):
            return None
        labels.append(msg[i:i + n].decode("ascii", "replace"))
        i += n
    if i + 4 > len(msg):
        return None
    qtype, qclass = struct.unpack("!HH", msg[i:i + 4])
    return qid, flags, ".".join(labels), qtype, qclass, i + 4


def reply(msg, table, transport):
    """The answer to one query message (bytes), or None: send nothing (a message that cannot
    be read at all, or a silent name)."""
    q = parse_question(msg)
    if q is None:
        if len(msg) < 2:
            return None
        return msg[:2] + struct.pack("!HHHHH", 0x8181, 0, 0, 0, 0)  # FORMERR
    qid, flags, name, qtype, qclass, end = q
    question = msg[12:end]
    addresses = table.answer(name, qtype, transport) if qclass == 1 else None
    if addresses is SILENT:
        return None
    rd = flags & 0x0100
    if addresses is None:
        return struct.pack("!HHHHHH", qid, 0x8083 | rd, 1, 0, 0, 0) + question  # NXDOMAIN
    records, count = b"", 0
    for a in addresses:
        ip = ipaddress.ip_address(a)
        rtype = A if ip.version == 4 else AAAA
        if rtype != qtype:
            continue
        data = ip.packed
        # The name as a pointer to the question's (offset 12); TTL 0: never to be cached.
        records += struct.pack("!HHHIH", 0xC00C, rtype, 1, 0, len(data)) + data
        count += 1
    return struct.pack("!HHHHHH", qid, 0x8080 | rd, 1, count, 0, 0) + question + records


class _Udp(socketserver.ThreadingUDPServer):
    daemon_threads = True
    allow_reuse_address = True


class _Tcp(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


class _UdpHandler(socketserver.BaseRequestHandler):
    def handle(self):
        data, sock = self.request
        out = reply(data, self.server.table, "udp")
        if out is not None:
            sock.sendto(out, self.client_address)


class _TcpHandler(socketserver.BaseRequestHandler):
    def handle(self):
        self.request.settimeout(10)
        try:
            while True:
                head = self._exactly(2)
                if head is None:
                    return
                msg = self._exactly(struct.unpack("!H", head)[0])
                if msg is None:
                    return
                out = reply(msg, self.server.table, "tcp")
                if out is None:
                    return
                self.request.sendall(struct.pack("!H", len(out)) + out)
        except OSError:
            return

    def _exactly(self, n):
        data = b""
        while len(data) < n:
            more = self.request.recv(n - len(data))
            if not more:
                return None
            data += more
        return data


class DnsServer:
    """UDP and TCP on (host, port), answering from .table. Call .close() when done."""

    def __init__(self, host="0.0.0.0", port=53):
        self.table = Table()
        self.servers = [_Udp((host, port), _UdpHandler), _Tcp((host, port), _TcpHandler)]
        for s in self.servers:
            s.table = self.table
            threading.Thread(target=s.serve_forever, daemon=True).start()

    def close(self):
        for s in self.servers:
            s.shutdown()
            s.server_close()


def ask(name, qtype, server=("127.0.0.1", 53), tcp=False, timeout=5):
    """One question to server: the addresses in its answer, or None for NXDOMAIN (used by
    the tests to see that the server answers before they rely on it)."""
    name_bytes = b"".join(bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\0"
    msg = struct.pack("!HHHHHH", 0x1234, 0x0100, 1, 0, 0, 0) + name_bytes + struct.pack("!HH", qtype, 1)
    if tcp:
        with socket.create_connection(server, timeout=timeout) as s:
            s.sendall(struct.pack("!H", len(msg)) + msg)
            n = struct.unpack("!H", s.recv(2))[0]
            data = b""
            while len(data) < n:
                data += s.recv(n - len(data))
    else:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.settimeout(timeout)
            s.sendto(msg, server)
            data = s.recv(4096)
    flags, _, ancount = struct.unpack("!HHH", data[2:8])
    if flags & 0xF == 3:
        return None
    i = 12 + len(name_bytes) + 4
    out = []
    for _ in range(ancount):
        rtype, _, _, length = struct.unpack("!HHIH", data[i + 2:i + 12])
        rdata = data[i + 12:i + 12 + length]
        out.append(str(ipaddress.ip_address(rdata)))
        i += 12 + length
    return out
