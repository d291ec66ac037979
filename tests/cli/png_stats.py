#!/usr/bin/env python3
"""Print 'WIDTH HEIGHT INKED COLOURS' for a PNG: pixels that differ from the top-left one (the
background) and the number of distinct colours among them (coarsely binned). Pure Python (zlib),
8-bit RGB/RGBA, non-interlaced, as Chromium writes them. Exit 1 on anything else."""
import struct
import sys
import zlib


def read_png(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, hdr = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            hdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
    w, h, depth, ctype, _, _, interlace = hdr
    if depth != 8 or ctype not in (2, 6) or interlace:
        raise ValueError("unsupported PNG (depth %d, colour type %d)" % (depth, ctype))
    bpp = 3 if ctype == 2 else 4
    raw, stride = zlib.decompress(idat), w * bpp
    rows, prev, i = [], bytearray(stride), 0
    for _ in range(h):
        f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    return w, h, bpp, rows


def main():
    w, h, bpp, rows = read_png(sys.argv[1])
    bg = tuple(rows[0][0:3])
    inked, colours = 0, set()
    for line in rows:
        for x in range(0, w * bpp, bpp):
            px = (line[x], line[x + 1], line[x + 2])
            if px != bg:
                inked += 1
                colours.add((px[0] >> 5, px[1] >> 5, px[2] >> 5))
    print(w, h, inked, len(colours))


if __name__ == "__main__":
    try:
        main()
    except (OSError, ValueError, zlib.error, struct.error) as e:
        sys.stderr.write("png_stats: %s\n" % e)
        sys.exit(1)
