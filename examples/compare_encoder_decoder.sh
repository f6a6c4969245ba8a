#!/bin/sh
# An encoder (BERT-base), a decoder (GPT-2 small) and an encoder-decoder (T5-small) of
# similar size, side by side at the same sequence length, with a chart.
# Run from the checkout: sh examples/compare_encoder_decoder.sh
# Its output is in docs/compare_encoder_decoder.txt.
set -e
archgraph compare bert-base-uncased gpt2 t5-small --set S=512 --chart compare_encoder_decoder.png
archgraph memory gpt2 --set B=8 --set S=1024
archgraph formula t5-small
