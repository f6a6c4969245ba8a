"""PointNet (Qi et al. 2017), as fxia22/pointnet.pytorch's model.py writes it: an input transform
(STN3d) and a feature transform (STNkd, k = 64) predicted from the points by shared 1x1 convolutions,
a max over the points and a small MLP, the identity added from a NumPy array; points and features
multiplied by them with torch.bmm; a global max-pooled feature classified by an MLP with batch norms
and dropout (eval)."""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


class STNkd(nn.Module):
    def __init__(self, k=64, width=(16, 32, 64)):
        super().__init__()
        a, b, c = width
        self.conv1, self.conv2, self.conv3 = nn.Conv1d(k, a, 1), nn.Conv1d(a, b, 1), nn.Conv1d(b, c, 1)
        self.fc1, self.fc2, self.fc3 = nn.Linear(c, b), nn.Linear(b, a), nn.Linear(a, k * k)
        self.bn1, self.bn2, self.bn3 = nn.BatchNorm1d(a), nn.BatchNorm1d(b), nn.BatchNorm1d(c)
        self.bn4, self.bn5 = nn.BatchNorm1d(b), nn.BatchNorm1d(a)
        self.k = k

    def forward(self, x):
        batchsize = x.size()[0]
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.relu(self.bn2(self.conv2(x)))
        x = F.relu(self.bn3(self.conv3(x)))
        x = torch.max(x, 2, keepdim=True)[0]
        x = x.view(-1, x.size(1))
        x = F.relu(self.bn4(self.fc1(x)))
        x = F.relu(self.bn5(self.fc2(x)))
        x = self.fc3(x)
        iden = torch.from_numpy(np.eye(self.k).flatten().astype(np.float32)).view(1, self.k * self.k)
        iden = iden.repeat(batchsize, 1)
        x = x + iden
        return x.view(-1, self.k, self.k)


class PointNetfeat(nn.Module):
    def __init__(self, feat=16, global_feat=64):
        super().__init__()
        self.stn = STNkd(k=3)
        self.conv1 = nn.Conv1d(3, feat, 1)
        self.conv2 = nn.Conv1d(feat, 32, 1)
        self.conv3 = nn.Conv1d(32, global_feat, 1)
        self.bn1, self.bn2, self.bn3 = nn.BatchNorm1d(feat), nn.BatchNorm1d(32), nn.BatchNorm1d(global_feat)
        self.fstn = STNkd(k=feat)
        self.global_feat = global_feat

    def forward(self, x):
        trans = self.stn(x)
        x = x.transpose(2, 1)
        x = torch.bmm(x, trans)
        x = x.transpose(2, 1)
        x = F.relu(self.bn1(self.conv1(x)))
        trans_feat = self.fstn(x)
        x = x.transpose(2, 1)
        x = torch.bmm(x, trans_feat)
        x = x.transpose(2, 1)
        x = F.relu(self.bn2(self.conv2(x)))
        x = self.bn3(self.conv3(x))
        x = torch.max(x, 2, keepdim=True)[0]
        return x.view(-1, self.global_feat), trans, trans_feat


class PointNetCls(nn.Module):
    def __init__(self, k=5):
        super().__init__()
        self.feat = PointNetfeat()
        self.fc1, self.fc2, self.fc3 = nn.Linear(64, 32), nn.Linear(32, 16), nn.Linear(16, k)
        self.dropout = nn.Dropout(p=0.3)
        self.bn1, self.bn2 = nn.BatchNorm1d(32), nn.BatchNorm1d(16)

    def forward(self, x):
        x, trans, trans_feat = self.feat(x)
        x = F.relu(self.bn1(self.fc1(x)))
        x = F.relu(self.bn2(self.dropout(self.fc2(x))))
        x = self.fc3(x)
        return F.log_softmax(x, dim=1), trans, trans_feat
