#!/usr/bin/env bash
# `gemmtune shapes` on the row-major view: a quoted layout code reads, an unquoted one exits 65
# with file:line and a message that says to quote it.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
printf 'layout,M,N,K\n"mk,nk",16,4096,4096\n' >"$TMP/rm.csv"
expect_exit 0 "quoted layout code reads" "$GT" shapes --cpu "$TMP/rm.csv"
expect_grep "quoted layout mapped as --rowmajor maps it" 'row-major mk,nk M=16 N=4096 K=4096 -> TN m=4096 n=16 k=4096'
printf 'layout,M,N,K\nmk,nk,16,4096,4096\n' >"$TMP/bad.csv"
expect_exit 65 "unquoted layout code exits 65" "$GT" shapes --cpu "$TMP/bad.csv"
expect_grep "unquoted layout: says to quote it" 'bad.csv:2: 5 columns, header has 4: a layout code holds a comma, write it quoted \("mk,nk"\)'
expect_exit 0 "shapes --help" "$GT" shapes --help
expect_grep "shapes --help shows the quoted form" '"mk,nk",16,4096,4096'
finish
