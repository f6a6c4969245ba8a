"""Capsule networks with dynamic routing (Sabour et al. 2017), as gram-ai/capsule-networks' capsule_network.py
writes them (CUDA calls removed): primary capsules as several convolutions whose outputs are flattened
and concatenated, squashed; digit capsules predicting from each primary capsule through its own route
weights (a broadcast matmul), three iterations of routing by agreement (softmax over the routes, the
squashed weighted sum, the agreement added to the logits); the class scores are the capsules' lengths,
and a fully connected decoder reconstructs the image from the longest capsule (one-hot by argmax)."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def softmax(input, dim=1):
    transposed_input = input.transpose(dim, len(input.size()) - 1)
    softmaxed_output = F.softmax(transposed_input.contiguous().view(-1, transposed_input.size(-1)), dim=-1)
    return softmaxed_output.view(*transposed_input.size()).transpose(dim, len(input.size()) - 1)


class CapsuleLayer(nn.Module):
    def __init__(self, num_capsules, num_route_nodes, in_channels, out_channels, kernel_size=None, stride=None,
                 num_iterations=3):
        super().__init__()
        self.num_route_nodes, self.num_iterations, self.num_capsules = num_route_nodes, num_iterations, num_capsules
        if num_route_nodes != -1:
            self.route_weights = nn.Parameter(torch.randn(num_capsules, num_route_nodes, in_channels, out_channels))
        else:
            self.capsules = nn.ModuleList(
                [nn.Conv2d(in_channels, out_channels, kernel_size=kernel_size, stride=stride, padding=0)
                 for _ in range(num_capsules)])

    def squash(self, tensor, dim=-1):
        squared_norm = (tensor ** 2).sum(dim=dim, keepdim=True)
        scale = squared_norm / (1 + squared_norm)
        return scale * tensor / torch.sqrt(squared_norm)

    def forward(self, x):
        if self.num_route_nodes != -1:
            priors = x[None, :, :, None, :] @ self.route_weights[:, None, :, :, :]
            logits = torch.zeros(*priors.size())
            for i in range(self.num_iterations):
                probs = softmax(logits, dim=2)
                outputs = self.squash((probs * priors).sum(dim=2, keepdim=True))
                if i != self.num_iterations - 1:
                    delta_logits = (priors * outputs).sum(dim=-1, keepdim=True)
                    logits = logits + delta_logits
        else:
            outputs = [capsule(x).view(x.size(0), -1, 1) for capsule in self.capsules]
            outputs = torch.cat(outputs, dim=-1)
            outputs = self.squash(outputs)
        return outputs


class CapsuleNet(nn.Module):
    def __init__(self, classes=5, image=20):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels=1, out_channels=16, kernel_size=5, stride=1)
        self.primary_capsules = CapsuleLayer(num_capsules=4, num_route_nodes=-1, in_channels=16, out_channels=8,
                                             kernel_size=5, stride=2)
        side = ((image - 4) - 5) // 2 + 1
        self.digit_capsules = CapsuleLayer(num_capsules=classes, num_route_nodes=8 * side * side, in_channels=4,
                                           out_channels=8)
        self.decoder = nn.Sequential(nn.Linear(8 * classes, 32), nn.ReLU(inplace=True), nn.Linear(32, image * image),
                                     nn.Sigmoid())
        self.classes = classes

    def forward(self, x):
        x = F.relu(self.conv1(x), inplace=True)
        x = self.primary_capsules(x)
        x = self.digit_capsules(x).squeeze().transpose(0, 1)
        classes = (x ** 2).sum(dim=-1) ** 0.5
        classes = F.softmax(classes, dim=-1)
        _, max_length_indices = classes.max(dim=1)
        y = torch.eye(self.classes).index_select(dim=0, index=max_length_indices)
        reconstructions = self.decoder((x * y[:, :, None]).reshape(x.size(0), -1))
        return classes, reconstructions
