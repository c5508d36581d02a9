#!/usr/bin/env bash
echo "bench: not built yet"; exit 1
