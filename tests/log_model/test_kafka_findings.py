"""Kafka behaviours the log model found, pinned on a real cluster: each test replays the
shrunk program of a finding and wants Kafka to still behave that way, so the model's
allowance for it (docs/log-model.md) is revisited when a Kafka release changes it."""

from __future__ import annotations

import pytest

from pytest_kreplica.logmodel.machine import LogMachine
from pytest_kreplica.logmodel.model import Batch
from pytest_kreplica.logmodel.runner import replay_program

pytestmark = [pytest.mark.log_model, pytest.mark.ci]


# shrunk by Hypothesis from the failing CI example, as its replay file had it
PROGRAM = [('create_topic', {'segment_bytes': 1024}),
 ('produce',
  {'batch': Batch(records=((b'k', b'\xe2\xe7O/\x01', 29937), (b'k', b'\x93', 2108),
                           (b'k', b'\xef', 13500), (b'k', b'', 0), (b'k', b'', 515),
                           (b'k', b'`\xdbm!\xfe\xf9\xf7', 197), (b'k', b'', 0), (b'k', b'', 0),
                           (b'k', b'', 0), (b'k', b'', 120002), (b'k', b'\xa0\xfd\xea', 43054),
                           (b'k', None, 536), (b'k', b'G\x8d\xce\xfcJw\x9e\x12', 22531),
                           (b'k', b'Z_\x94\xcd\x15\xd4\xb1', 120041), (b'k', b'', 0),
                           (b'k', b'', 0)),
                  compression='none',
                  acks='all')}),
 ('delete_records', {'position': 0}),
 ('read', {'isolation': 'read_uncommitted', 'limit': 1, 'position': 65}),
 ('produce',
  {'batch': Batch(records=((None, b'D\xcc\xa9', 424),
                           (None, b'\x96?\xe81\x82\xd2\xa4\xfd\x9f?\xc8Mf\xb6J\xf1', 54887),
                           (None, b'\xfe\xc1\x8b\xbb\xba\xe7P\xf4\x88', 1224),
                           (None, b'&\xa4\x01', 723), (None, b'k%d', 936),
                           (None, b'\xc7\xdf', 573616), (None, b'\xd6@', 2015),
                           (None, b'\xc2', 846), (None, b'j', 15093),
                           (None, b'\xbe,\xdf\x949\rh\xc1', 489), (None, b'\x9c\xfd2\x1b', 231),
                           (None, b'\xe8BL\x00[x\xa8c\xee\xfd', 1264), (None, b' ', 7242),
                           (None, b'\xec\x11\xe8|', 5164),
                           (None, b'\xe8\x7f\x86|M\xa2\x18z\x82\xa9\xcfy\x88b\xb6', 262144),
                           (None, b'\xeb', 401), (None, b'\xaag\xb4\xeb\x05', 178),
                           (None, b'\x08Y\xea\x87', 2294), (None, b'', 388), (None, b'2@', 482),
                           (None, b'\xd0', 347), (None, b'', 0),
                           (None,
                            b'\xaf\x04EW9"\xfd\xe6\xb6i_\xf4\x17\xd8\xde\xe3|\x08&\xf3'
                            b'\xafA@\xd0\xc4\x1f\x1d\x07HN\x84\x06\xea\x98\xb1\x80\x84',
                            474),
                           (None, b'\xb9\x07\xc27', 0), (None, b'', 1547),
                           (None, b':\xd7\xaa\x0f\x88', 78094)),
                  compression='none',
                  acks='all')}),
 ('produce',
  {'batch': Batch(records=((None, b'_\x9d', 30949),), compression='none', acks='all')}),
 ('delete_records', {'position': 27}), ('delete_records', {'position': 91}),
 ('delete_records', {'position': 21}),
 ('alter_segments', {'segment_bytes': 16384, 'segment_ms': 100}),
 ('delete_records', {'position': 44}),
 ('produce',
  {'batch': Batch(records=((b'k0', b' ', 100001), (b'k1', None, 4058), (b'k2', b'', 2272),
                           (b'k3', b'\x01', 518), (b'k4', None, 3250), (b'k5', None, 1209),
                           (b'k6', b'', 890), (b'k7', b' ', 509051), (b'k8', None, 314)),
                  compression='none',
                  acks='1')}),
 ('produce',
  {'batch': Batch(records=((b'k0', b'\x948\x82\xb0\xdb\xe90', 4652), (b'k1', None, 164),
                           (b'k2', b'W\x10\xfc', 15313), (b'k3', None, 412),
                           (b'k4', b'\x83i]\xfa+\xdd=', 16234), (b'k5', None, 714),
                           (b'k6', b'\xec>', 24475), (b'k7', b'', 1257), (b'k8', None, 2422),
                           (b'k9', None, 100000), (b'k10', None, 264448),
                           (b'k11', b'#\xbd"O\xbe\xf6\x80^', 23943), (b'k12', b'\xd6', 732),
                           (b'k13', b'\x1ep', 324), (b'k14', b'R\xfd\xbf\x08\xca', 358),
                           (b'k15', None, 248), (b'k16', b'\xdbg\x93\xda', 29),
                           (b'k17', None, 11), (b'k18', b'', 204216), (b'k19', b'\x83', 1949),
                           (b'k20', None, 220), (b'k21', b'\xb4', 9325),
                           (b'k22', b'L\xcb\xd1\x1dE\r\x1fp', 229), (b'k23', None, 364),
                           (b'k24', b'\xc1', 23455)),
                  compression='snappy',
                  acks='1')}),
 ('read_acked', {'isolation': 'read_uncommitted', 'offset': 16}),
 ('produce',
  {'batch': Batch(records=((b'k', b'\xd2\x88\x878o', 145852), (b'k', None, 952),
                           (b'k', None, 125323), (b'k', None, 484),
                           (b'k', b'\x06\xd0\xd5\xd6\x13SBY\xe8N\xe5\x9a1s%D\xaf\xaa|', 384),
                           (b'k', b'?\t\xcej', 566), (b'k', None, 18731),
                           (b'k', b'\xf6', 103142), (b'k', b'y\xb5', 6005),
                           (b'k', b'\xce\xf6', 120), (b'k', b'p', 138949), (b'k', b'', 794),
                           (b'k', b'\x0fP\x96\xd3b', 60609),
                           (b'k', b'\x81hb`\x12\xe9\x07\xe7(\x87', 14972),
                           (b'k', b'\xc9', 28405), (b'k', b'\xfa\xf0\xf2', 889),
                           (b'k', b'\xab\x15', 600000), (b'k', None, 55031),
                           (b'k', b'\x95', 53441), (b'k', b'\xab\xe6^:\x97', 72787),
                           (b'k', b'', 20293), (b'k', b'\x1aK\xcd\x96\x9e', 4820)),
                  compression='lz4',
                  acks='all')}),
 ('alter_segments', {'segment_bytes': 4096, 'segment_ms': 100}),
 ('offsets_for_times', {'at': 78834})]


def test_list_offsets_by_time_answers_none_past_records_delete_records_removed(
        kreplica_log_cluster, tmp_path):
    """Offset 43 (the first record at or after the time, above the log start) is readable,
    yet Kafka answers none: the first segment whose largest timestamp reaches the time holds
    only records below the log start. The model accepts it (``LogModel.time_answers``)."""
    seen: list[tuple[int | None, int | None]] = []  # (the protocol's answer, Kafka's)

    class TimeAnswers(LogMachine):
        def offsets_for_times(self, at: int) -> None:
            timestamp = self.base_ms + at
            seen.append((self.model.offset_for_time(timestamp),
                         self.system.list_offset(self.topic, timestamp)))
            LogMachine.offsets_for_times(self, at=at)

    replay_program(kreplica_log_cluster, tmp_path / "replay", PROGRAM, TimeAnswers)
    assert seen == [(43, None)], seen
