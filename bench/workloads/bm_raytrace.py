"""raytrace: a small object-oriented ray tracer (spheres and a plane, point lights, shadows,
one level of reflection) rendering a tiny image per unit of work."""

import math

from _driver import run

WIDTH = HEIGHT = 32


class Vec:
    __slots__ = ("x", "y", "z")

    def __init__(self, x, y, z):
        self.x, self.y, self.z = x, y, z

    def __add__(self, o):
        return Vec(self.x + o.x, self.y + o.y, self.z + o.z)

    def __sub__(self, o):
        return Vec(self.x - o.x, self.y - o.y, self.z - o.z)

    def scale(self, k):
        return Vec(self.x * k, self.y * k, self.z * k)

    def dot(self, o):
        return self.x * o.x + self.y * o.y + self.z * o.z

    def length(self):
        return math.sqrt(self.dot(self))

    def normalized(self):
        return self.scale(1.0 / self.length())

    def reflect(self, normal):
        return self - normal.scale(2.0 * self.dot(normal))


class Ray:
    def __init__(self, origin, direction):
        self.origin, self.direction = origin, direction.normalized()

    def at(self, t):
        return self.origin + self.direction.scale(t)


class Sphere:
    def __init__(self, centre, radius, colour, reflect):
        self.centre, self.radius, self.colour, self.reflect = centre, radius, colour, reflect

    def intersect(self, ray):
        oc = ray.origin - self.centre
        b = oc.dot(ray.direction)
        c = oc.dot(oc) - self.radius * self.radius
        disc = b * b - c
        if disc < 0:
            return None
        root = math.sqrt(disc)
        for t in (-b - root, -b + root):
            if t > 1e-6:
                return t
        return None

    def normal_at(self, point):
        return (point - self.centre).normalized()


class Plane:
    def __init__(self, point, normal, colour, reflect):
        self.point, self.normal = point, normal.normalized()
        self.colour, self.reflect = colour, reflect

    def intersect(self, ray):
        denom = self.normal.dot(ray.direction)
        if abs(denom) < 1e-9:
            return None
        t = (self.point - ray.origin).dot(self.normal) / denom
        return t if t > 1e-6 else None

    def normal_at(self, _point):
        return self.normal


class Scene:
    def __init__(self):
        self.objects = [
            Sphere(Vec(0, 1, 5), 1.0, Vec(0.9, 0.2, 0.2), 0.3),
            Sphere(Vec(-1.8, 0.7, 6), 0.7, Vec(0.2, 0.9, 0.3), 0.2),
            Sphere(Vec(1.7, 0.6, 4.5), 0.6, Vec(0.3, 0.3, 0.9), 0.5),
            Plane(Vec(0, 0, 0), Vec(0, 1, 0), Vec(0.8, 0.8, 0.8), 0.1),
        ]
        self.lights = [Vec(-4, 6, 0), Vec(5, 4, 2)]

    def nearest(self, ray):
        best, hit = None, None
        for obj in self.objects:
            t = obj.intersect(ray)
            if t is not None and (best is None or t < best):
                best, hit = t, obj
        return best, hit

    def shade(self, ray, depth):
        t, obj = self.nearest(ray)
        if obj is None:
            return Vec(0.1, 0.1, 0.15)
        point = ray.at(t)
        normal = obj.normal_at(point)
        colour = obj.colour.scale(0.1)
        for light in self.lights:
            to_light = light - point
            distance = to_light.length()
            shadow_t, _ = self.nearest(Ray(point, to_light))
            if shadow_t is not None and shadow_t < distance:
                continue
            lambert = max(0.0, normal.dot(to_light.normalized()))
            colour = colour + obj.colour.scale(0.7 * lambert)
        if depth > 0 and obj.reflect > 0:
            bounce = Ray(point, ray.direction.reflect(normal))
            colour = colour.scale(1 - obj.reflect) + self.shade(bounce, depth - 1).scale(
                obj.reflect
            )
        return colour


def render(scene, shift):
    eye = Vec(shift, 1.0, -1.0)
    total = 0
    for py in range(HEIGHT):
        for px in range(WIDTH):
            target = Vec((px - WIDTH / 2) / WIDTH, (HEIGHT / 2 - py) / HEIGHT + 1.0, 0.0)
            c = scene.shade(Ray(eye, target - eye), 1)
            total += int(255 * min(1.0, c.x)) + int(255 * min(1.0, c.y)) + int(255 * min(1.0, c.z))
    return total


SCENE = Scene()


def step(i):
    return render(SCENE, (i % 5) * 0.05)


if __name__ == "__main__":
    run(step)
