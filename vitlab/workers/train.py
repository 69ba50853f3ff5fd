"""python -m vitlab.workers.train NAME DATASET RECIPE_JSON DEVICE: train one digits model and save its weights.

`vitlab.train.trained()` runs this in a fresh interpreter when IPEX is imported in the caller (IPEX swaps in its
own CPU LayerNorm kernel, so weights trained there would depend on the caller's imports).
"""
import json
import sys

from vitlab.train import save_weights, train_recipe, weights_path

if __name__ == "__main__":
    name, dataset, recipe, device = sys.argv[1:5]
    model, _, _ = train_recipe(name, dataset, json.loads(recipe), device)
    save_weights(model.cpu(), weights_path(name, dataset), json.loads(recipe))
