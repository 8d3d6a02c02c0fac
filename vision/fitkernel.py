"""The pose fit's inner loop, compiled: robust point-to-plane Gauss–Newton for H starting poses.

Why compiled: the fit runs a few hundred times a frame on 35 hypotheses of about 150 points, and
in numpy each of its two dozen array operations per iteration pays Python's overhead on arrays
too small to amortise it; pose fitting was the largest stage of a CPU frame (148 ms of 425).
numba compiles the same arithmetic into one loop per hypothesis. `vision.pose.gauss_newton_batch`
is the numpy statement of it and stays the reference the tests hold this to (the same poses
within 1e-6 mm; sums run in another order, so not bit for bit).
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def _turn(R, wx, wy, wz):
    """R times the rotation of vector w, by Rodrigues' formula (as vision.pose._exp_batch),
    written out: matrix products would pull BLAS into the compiled code and triple its compile time."""
    a = np.sqrt(wx * wx + wy * wy + wz * wz)
    s = a if a >= 1e-12 else 1.0
    kx, ky, kz = wx / s, wy / s, wz / s
    K = np.array([[0.0, -kz, ky], [kz, 0.0, -kx], [-ky, kx, 0.0]])
    sa, ca = np.sin(a), 1.0 - np.cos(a)
    E = np.empty((3, 3))
    for i in range(3):
        for j in range(3):
            kk = K[i, 0] * K[0, j] + K[i, 1] * K[1, j] + K[i, 2] * K[2, j]
            E[i, j] = (1.0 if i == j else 0.0) + sa * K[i, j] + ca * kk
    out = np.empty((3, 3))
    for i in range(3):
        for j in range(3):
            out[i, j] = R[i, 0] * E[0, j] + R[i, 1] * E[1, j] + R[i, 2] * E[2, j]
    return out


@njit(cache=True)
def _solve_spd(A, b):
    """x with A x = b for a symmetric positive definite A (the damped normal matrix), by Cholesky:
    a 6 x 6 system needs no LAPACK call, and compiles in a fraction of np.linalg.solve's time."""
    m = A.shape[0]
    L = np.zeros((m, m))
    for i in range(m):
        for j in range(i + 1):
            acc = A[i, j]
            for k in range(j):
                acc -= L[i, k] * L[j, k]
            L[i, j] = np.sqrt(acc) if i == j else acc / L[j, j]
    y = np.empty(m)
    for i in range(m):
        acc = b[i]
        for k in range(i):
            acc -= L[i, k] * y[k]
        y[i] = acc / L[i, i]
    x = np.empty(m)
    for i in range(m - 1, -1, -1):
        acc = y[i]
        for k in range(i + 1, m):
            acc -= L[k, i] * x[k]
        x[i] = acc / L[i, i]
    return x


@njit(cache=True)
def signed_distances(n, d, R, t, pts):
    """Each point's signed distance to the solid with face normals n (5, 3) and offsets d (5,)
    at pose R, t: the largest face-plane distance, negative inside (as vision.pose._residuals).
    The stages after the fit ask this a few hundred times a frame, of small point sets."""
    P = pts.shape[0]
    out = np.empty(P)
    for p in range(P):
        dx, dy, dz = pts[p, 0] - t[0], pts[p, 1] - t[1], pts[p, 2] - t[2]
        q0 = dx * R[0, 0] + dy * R[1, 0] + dz * R[2, 0]
        q1 = dx * R[0, 1] + dy * R[1, 1] + dz * R[2, 1]
        q2 = dx * R[0, 2] + dy * R[1, 2] + dz * R[2, 2]
        r = n[0, 0] * q0 + n[0, 1] * q1 + n[0, 2] * q2 - d[0]
        for f in range(1, 5):
            r = max(r, n[f, 0] * q0 + n[f, 1] * q1 + n[f, 2] * q2 - d[f])
        out[p] = r
    return out


@njit(cache=True)
def gauss_newton_batch(n, d, verts, R, t, pts, huber, contact_mm, iterations, trunc):
    """R (H, 3, 3), t (H, 3) fitted to pts (P, 3) for the solid with face normals n (5, 3) and
    offsets d (5,); returns R, t and the residuals (H, P) at the fitted poses."""
    H, P, V = R.shape[0], pts.shape[0], verts.shape[0]
    if H == 0:
        return R.copy(), t.copy(), np.empty((0, P))
    R = R.copy()
    t = t.copy()
    w_contact2 = max(P, 1) * 0.36
    q = np.empty(3)
    J = np.empty(6)
    steps = np.empty((H, 6))
    for _ in range(iterations):
        for h in range(H):
            Hm = np.zeros((6, 6))
            g = np.zeros(6)
            Rh = R[h]
            for p in range(P):
                dx, dy, dz = pts[p, 0] - t[h, 0], pts[p, 1] - t[h, 1], pts[p, 2] - t[h, 2]
                for j in range(3):
                    q[j] = dx * Rh[0, j] + dy * Rh[1, j] + dz * Rh[2, j]
                k = 0
                r = n[0, 0] * q[0] + n[0, 1] * q[1] + n[0, 2] * q[2] - d[0]
                for f in range(1, 5):
                    sf = n[f, 0] * q[0] + n[f, 1] * q[1] + n[f, 2] * q[2] - d[f]
                    if sf > r:
                        r, k = sf, f
                a = abs(r)
                w = 1.0 if a <= huber else huber / max(a, 1e-9)
                if trunc > 0 and r > trunc:
                    w = 0.0
                nx, ny, nz = n[k, 0], n[k, 1], n[k, 2]
                J[0] = ny * q[2] - nz * q[1]
                J[1] = nz * q[0] - nx * q[2]
                J[2] = nx * q[1] - ny * q[0]
                for j in range(3):  # -(R n_k): the face normal in the table frame
                    J[3 + j] = -(Rh[j, 0] * nx + Rh[j, 1] * ny + Rh[j, 2] * nz)
                for i in range(6):
                    wi = w * J[i]
                    g[i] += wi * r
                    for j in range(6):
                        Hm[i, j] += wi * J[j]
            zx, zy, zz = Rh[2, 0], Rh[2, 1], Rh[2, 2]
            for v in range(V):  # corners at or below the table are pulled onto it
                vz = verts[v, 0] * zx + verts[v, 1] * zy + verts[v, 2] * zz + t[h, 2]
                if vz < contact_mm:
                    J[0] = verts[v, 1] * zz - verts[v, 2] * zy
                    J[1] = verts[v, 2] * zx - verts[v, 0] * zz
                    J[2] = verts[v, 0] * zy - verts[v, 1] * zx
                    J[3], J[4], J[5] = 0.0, 0.0, 1.0
                    for i in range(6):
                        wi = w_contact2 * J[i]
                        g[i] += wi * vz
                        for j in range(6):
                            Hm[i, j] += wi * J[j]
            for i in range(6):
                Hm[i, i] += 1e-3
            x = _solve_spd(Hm, g)
            for j in range(6):
                steps[h, j] = -x[j]
        biggest = 0.0
        for h in range(H):
            R[h] = _turn(R[h], steps[h, 0], steps[h, 1], steps[h, 2])
            for j in range(3):
                t[h, j] += steps[h, 3 + j]
            for j in range(6):
                biggest = max(biggest, abs(steps[h, j]))
        if biggest < 1e-4:
            break
    res = np.empty((H, P))
    for h in range(H):
        res[h] = signed_distances(n, d, R[h], t[h], pts)
    return R, t, res


@njit(cache=True)
def free_space(samples, R, t, A, b, fx, fy, ppx, ppy, depth, tol):
    """Per pose h, the share of the surface samples (G, S, 3; G is 1 or H) that, carried to the
    table by R[h], t[h] and to the camera by the affine map p @ A + b, lie more than tol in front
    of the depth seen at their pixel, among those that land on a pixel with depth (as
    vision.pose._free_space_of). The later stages ask it hundreds of times a frame."""
    H, G, S = R.shape[0], samples.shape[0], samples.shape[1]
    hgt, wid = depth.shape
    out = np.empty(H)
    for h in range(H):
        g = 0 if G == 1 else h
        bad, valid = 0, 0
        for s in range(S):
            x, y, z = samples[g, s, 0], samples[g, s, 1], samples[g, s, 2]
            tx = x * R[h, 0, 0] + y * R[h, 0, 1] + z * R[h, 0, 2] + t[h, 0]
            ty = x * R[h, 1, 0] + y * R[h, 1, 1] + z * R[h, 1, 2] + t[h, 1]
            tz = x * R[h, 2, 0] + y * R[h, 2, 1] + z * R[h, 2, 2] + t[h, 2]
            cz = tx * A[0, 2] + ty * A[1, 2] + tz * A[2, 2] + b[2]
            if cz <= 1.0:
                continue
            cx = tx * A[0, 0] + ty * A[1, 0] + tz * A[2, 0] + b[0]
            cy = tx * A[0, 1] + ty * A[1, 1] + tz * A[2, 1] + b[1]
            u = np.rint(fx * cx / cz + ppx)
            v = np.rint(fy * cy / cz + ppy)
            if u < 0 or u >= wid or v < 0 or v >= hgt:
                continue
            obs = depth[int(v), int(u)]
            if obs > 0:
                valid += 1
                if cz < obs - tol:
                    bad += 1
        out[h] = bad / max(valid, 1)
    return out


def warm() -> None:
    """Compile the kernels into numba's cache now (seconds, once per machine), so a first frame
    does not wait for it: scripts/setup.sh calls this after installing."""
    n = np.array([[0.0, 0.0, -1.0], [1.0, 0.0, 0.5], [-1.0, 0.0, 0.5], [0.0, 1.0, 0.5], [0.0, -1.0, 0.5]])
    d, verts, pts = np.zeros(5), np.zeros((5, 3)), np.zeros((2, 3))
    signed_distances(n, d, np.eye(3), np.zeros(3), pts)
    gauss_newton_batch(n, d, verts, np.eye(3)[None], np.zeros((1, 3)), pts, 1.5, 1.0, 1, 0.0)
    free_space(pts[None], np.eye(3)[None], np.zeros((1, 3)), np.eye(3), np.zeros(3), 1.0, 1.0, 0.0, 0.0,
               np.ones((2, 2), np.float32), 1.0)
