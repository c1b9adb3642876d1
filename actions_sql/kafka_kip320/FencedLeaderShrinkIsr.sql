-- Kip320.tla: FencedLeaderShrinkIsr
-- The true leader drops from its ISR a follower that is not on its epoch or whose end offset lags.
-- The guard is a disjunction before any primed variable: TLC takes each true disjunct as a step of
-- its own, so a follower that both is off the leader's epoch and lags is generated twice, the same
-- successor both times (docs/generated-counts.md).
WITH choices AS (
    SELECT f.*, l.li, l.leader, r.ri, r.follower, d.d
    FROM frontier AS f
    LATERAL VIEW posexplode(Replicas) l AS li, leader        -- \E leader \in Replicas
    LATERAL VIEW posexplode(Replicas) r AS ri, follower      -- \E follower \in isr \ {leader}
    LATERAL VIEW explode(array(0, 1)) d AS d                 --   \/ disjunct 0 \/ disjunct 1
),

enabled AS (
    SELECT *, array_remove(replicaState[li].isr, follower) AS newIsr
    FROM choices
    WHERE array_contains(replicaState[li].isr, follower) AND follower <> leader
      AND IF(d = 0,
             NOT (replicaState[li].leader <=> leader                         -- ~ IsFollowingLeaderEpoch(leader, follower)
                  AND replicaState[ri].leader <=> leader                     --   (a leader NONE is NULL)
                  AND replicaState[ri].leaderEpoch = replicaState[li].leaderEpoch),
             replicaLog[ri].endOffset < replicaLog[li].endOffset)            -- GetEndOffset(follower) < leaderEndOffset
      AND quorumState.leader = leader                                    -- QuorumUpdateLeaderAndIsr: IsTrueLeader
      AND replicaState[li].leader = leader
      AND replicaState[li].leaderEpoch = quorumState.leaderEpoch
),

final AS (
    SELECT
        replicaLog,
        transform(replicaState, (x, i) -> IF(i = li, named_struct(
            'hw', x.hw, 'leaderEpoch', x.leaderEpoch, 'leader', x.leader, 'isr', newIsr), x)) AS replicaState,
        nextRecordId, nextLeaderEpoch, leaderAndIsrRequests,
        named_struct('leader', quorumState.leader, 'leaderEpoch', quorumState.leaderEpoch, 'isr', newIsr) AS quorumState,
        _parent, (li * size(Replicas) + ri) * 2 + d AS _choice
    FROM enabled
)

SELECT * FROM final
