"""Prints a real TLS ClientHello (the first flight of Python's ssl) for the name in argv[1]
('-' for none) and the highest version in argv[2] ('1.2' or '1.3'): what test_egress_sni
parses."""
import ssl
import sys

ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
if sys.argv[2] == "1.2":
    ctx.maximum_version = ssl.TLSVersion.TLSv1_2
incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
name = None if sys.argv[1] == "-" else sys.argv[1]
conn = ctx.wrap_bio(incoming, outgoing, server_hostname=name)
try:
    conn.do_handshake()
except ssl.SSLWantReadError:
    pass
sys.stdout.buffer.write(outgoing.read())
