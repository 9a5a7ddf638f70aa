"""mdp: solve a small stochastic battle game (a Markov decision process) by value iteration.

State: (own hit points, foe hit points, potions left). Each turn the player either attacks
(hits with some probability for 1-3 damage) or drinks a potion; then the foe strikes back.
The value of a state is the probability of winning under the best policy.
"""

from _driver import run

MAX_HP = 9
POTIONS = 3
HEAL = 4
EPSILON = 1e-10


def outcomes(state, action):
    """List of (probability, next state or terminal value) for one turn."""
    hp, foe, potions = state
    after_player = []
    if action == "attack":
        after_player.append((0.3, (hp, foe, potions)))
        for dmg in (1, 2, 3):
            after_player.append((0.7 / 3, (hp, foe - dmg, potions)))
    else:
        after_player.append((1.0, (min(MAX_HP, hp + HEAL), foe, potions - 1)))
    result = []
    for p, (hp1, foe1, pot1) in after_player:
        if foe1 <= 0:
            result.append((p, 1.0))
            continue
        result.append((p * 0.4, (hp1, foe1, pot1)))
        for dmg, q in ((1, 0.35), (2, 0.25)):
            hp2 = hp1 - dmg
            result.append((p * q, 0.0 if hp2 <= 0 else (hp2, foe1, pot1)))
    return result


def solve():
    states = [
        (hp, foe, pot)
        for hp in range(1, MAX_HP + 1)
        for foe in range(1, MAX_HP + 1)
        for pot in range(POTIONS + 1)
    ]
    actions = {s: ["attack", "potion"] if s[2] else ["attack"] for s in states}
    table = {(s, a): outcomes(s, a) for s in states for a in actions[s]}
    value = dict.fromkeys(states, 0.0)
    sweeps = 0
    while True:
        sweeps += 1
        delta = 0.0
        for s in states:
            best = 0.0
            for a in actions[s]:
                total = 0.0
                for p, nxt in table[(s, a)]:
                    total += p * (nxt if isinstance(nxt, float) else value[nxt])
                if total > best:
                    best = total
            delta = max(delta, abs(best - value[s]))
            value[s] = best
        if delta < EPSILON:
            break
    policy = {
        s: max(
            actions[s],
            key=lambda a, s=s: sum(
                p * (n if isinstance(n, float) else value[n]) for p, n in table[(s, a)]
            ),
        )
        for s in states
    }
    drinks = sum(1 for a in policy.values() if a == "potion")
    return value[(MAX_HP, MAX_HP, POTIONS)], sweeps, drinks


def step(_i):
    v, sweeps, drinks = solve()
    return int(v * 1e9) * 1000 + sweeps * 10 + drinks % 10


if __name__ == "__main__":
    run(step)
