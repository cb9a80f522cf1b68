#!/usr/bin/python3
"""The kernel of verify_fp16.py with a classic bug: the scale 1/sqrt(d) forgotten.

    /usr/bin/python3 docs/examples/verify_broken.py [HOST:PORT]   (default localhost:8080,
                                                                 or $ATTND)

The same problems go to the V2 model `verify`; each fails, and the script prints its
three worst cells with the kernel's value, gold's and a naive float16 kernel's.
"""
import os
import sys

from verify_fp16 import check

if __name__ == "__main__":
    address = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("ATTND", "localhost:8080")
    sys.exit(0 if check(address, lambda d: 1.0) else 1)
