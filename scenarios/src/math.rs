//! Just enough 3D vector and quaternion maths for the scenario simulations.

use core::ops::{Add, AddAssign, Mul, Neg, Sub, SubAssign};

/// A 3D vector (f64: the simulations quantise or round to f32 at the end).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct V3 {
    pub(crate) x: f64,
    pub(crate) y: f64,
    pub(crate) z: f64,
}

impl V3 {
    pub(crate) const fn new(x: f64, y: f64, z: f64) -> Self {
        Self { x, y, z }
    }

    pub(crate) fn dot(self, o: Self) -> f64 {
        self.x * o.x + self.y * o.y + self.z * o.z
    }

    pub(crate) fn cross(self, o: Self) -> Self {
        Self::new(
            self.y * o.z - self.z * o.y,
            self.z * o.x - self.x * o.z,
            self.x * o.y - self.y * o.x,
        )
    }

    pub(crate) fn len(self) -> f64 {
        self.dot(self).sqrt()
    }
}

impl Add for V3 {
    type Output = Self;
    fn add(self, o: Self) -> Self {
        Self::new(self.x + o.x, self.y + o.y, self.z + o.z)
    }
}

impl Sub for V3 {
    type Output = Self;
    fn sub(self, o: Self) -> Self {
        Self::new(self.x - o.x, self.y - o.y, self.z - o.z)
    }
}

impl Mul<f64> for V3 {
    type Output = Self;
    fn mul(self, k: f64) -> Self {
        Self::new(self.x * k, self.y * k, self.z * k)
    }
}

impl Neg for V3 {
    type Output = Self;
    fn neg(self) -> Self {
        Self::new(-self.x, -self.y, -self.z)
    }
}

impl AddAssign for V3 {
    fn add_assign(&mut self, o: Self) {
        *self = *self + o;
    }
}

impl SubAssign for V3 {
    fn sub_assign(&mut self, o: Self) {
        *self = *self - o;
    }
}

/// A rotation quaternion, components in x, y, z, w order.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Quat {
    pub(crate) x: f64,
    pub(crate) y: f64,
    pub(crate) z: f64,
    pub(crate) w: f64,
}

impl Quat {
    pub(crate) const IDENTITY: Self = Self {
        x: 0.0,
        y: 0.0,
        z: 0.0,
        w: 1.0,
    };

    /// Rotation by `angle` radians about the unit vector `axis`.
    pub(crate) fn from_axis_angle(axis: V3, angle: f64) -> Self {
        let (s, c) = (angle * 0.5).sin_cos();
        Self {
            x: axis.x * s,
            y: axis.y * s,
            z: axis.z * s,
            w: c,
        }
    }

    /// The Hamilton product `self * o`: rotate by `o`, then by `self`.
    pub(crate) fn mul(self, o: Self) -> Self {
        Self {
            w: self.w * o.w - self.x * o.x - self.y * o.y - self.z * o.z,
            x: self.w * o.x + self.x * o.w + self.y * o.z - self.z * o.y,
            y: self.w * o.y - self.x * o.z + self.y * o.w + self.z * o.x,
            z: self.w * o.z + self.x * o.y - self.y * o.x + self.z * o.w,
        }
    }

    pub(crate) fn normalized(self) -> Self {
        let n = (self.x * self.x + self.y * self.y + self.z * self.z + self.w * self.w).sqrt();
        if n > 0.0 {
            Self {
                x: self.x / n,
                y: self.y / n,
                z: self.z / n,
                w: self.w / n,
            }
        } else {
            Self::IDENTITY
        }
    }

    /// Advances the orientation by world angular velocity `w` over `dt`.
    pub(crate) fn integrate(self, w: V3, dt: f64) -> Self {
        let spin = Self {
            x: w.x,
            y: w.y,
            z: w.z,
            w: 0.0,
        }
        .mul(self);
        let h = 0.5 * dt;
        Self {
            x: self.x + spin.x * h,
            y: self.y + spin.y * h,
            z: self.z + spin.z * h,
            w: self.w + spin.w * h,
        }
        .normalized()
    }

    /// The body axes (rotation matrix columns) in world space.
    pub(crate) fn axes(self) -> [V3; 3] {
        let Self { x, y, z, w } = self;
        [
            V3::new(
                1.0 - 2.0 * (y * y + z * z),
                2.0 * (x * y + w * z),
                2.0 * (x * z - w * y),
            ),
            V3::new(
                2.0 * (x * y - w * z),
                1.0 - 2.0 * (x * x + z * z),
                2.0 * (y * z + w * x),
            ),
            V3::new(
                2.0 * (x * z + w * y),
                2.0 * (y * z - w * x),
                1.0 - 2.0 * (x * x + y * y),
            ),
        ]
    }

    pub(crate) fn to_array(self) -> [f64; 4] {
        [self.x, self.y, self.z, self.w]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes_match_rotation() {
        let q = Quat::from_axis_angle(V3::new(0.0, 0.0, 1.0), core::f64::consts::FRAC_PI_2);
        let [ax, ay, az] = q.axes();
        assert!((ax - V3::new(0.0, 1.0, 0.0)).len() < 1e-12);
        assert!((ay - V3::new(-1.0, 0.0, 0.0)).len() < 1e-12);
        assert!((az - V3::new(0.0, 0.0, 1.0)).len() < 1e-12);
    }

    #[test]
    fn integrate_spins_about_world_axis() {
        let mut q = Quat::IDENTITY;
        for _ in 0..1000 {
            q = q.integrate(V3::new(0.0, 0.0, core::f64::consts::FRAC_PI_2), 0.001);
        }
        let [ax, _, _] = q.axes();
        assert!((ax - V3::new(0.0, 1.0, 0.0)).len() < 1e-3, "{ax:?}");
    }
}
