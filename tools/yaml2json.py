#!/usr/bin/python3
"""Build-time conversion of api/openapi.yaml (the source) into the JSON form served
at /openapi.json, so both are the same document. Uses Debian's python3-yaml."""
import json
import sys

import yaml

with open(sys.argv[1], encoding="utf-8") as src:
    doc = yaml.safe_load(src)
with open(sys.argv[2], "w", encoding="utf-8") as dst:
    json.dump(doc, dst, ensure_ascii=False, indent=2)
    dst.write("\n")
