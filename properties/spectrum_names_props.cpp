// Spectrum names as users write them (`--spectrum`, sweep CSVs, report plans): parse_spectrum
// reads what Spectrum::text writes, and the documented forms mean what the documentation says.
//
// Why this is not checked elsewhere: the matrix properties (foundation/generators_props.cpp) draw Spectrum
// values directly, so a name that parses to the wrong kind (powerlaw:1 read as gaussian) would
// give every sweep a different input than its CSV says, with no property failing. The oracle is
// the grammar of spectra.hpp and the README, written out below as literal cases; the round trip
// covers the drawn parameters.
#include <boost/test/unit_test.hpp>
#include <string>

#include "check.hpp"
#include "nsv/spectra.hpp"

using namespace nsv;

namespace {

rc::Gen<Spectrum> named_spectra() {
  const auto with = [](Spectrum::Kind kind, std::int64_t rank, double alpha, double log10_condition) {
    Spectrum sp;
    sp.kind = kind;
    sp.rank = rank;
    sp.alpha = alpha;
    sp.log10_condition = log10_condition;
    return sp;
  };
  return rc::gen::apply(with,
                        rc::gen::element(Spectrum::Kind::gaussian, Spectrum::Kind::lowrank, Spectrum::Kind::powerlaw,
                                         Spectrum::Kind::ill_conditioned),
                        rc::gen::inRange<std::int64_t>(1, 65), rc::gen::map(rc::gen::inRange(0, 41), [](int k) { return k / 8.0; }),
                        rc::gen::map(rc::gen::inRange(0, 301), [](int k) { return static_cast<double>(k); }));
}

}  // namespace

BOOST_AUTO_TEST_SUITE(foundation)

BOOST_AUTO_TEST_SUITE(spectrum_names)

// A name read back names the same spectrum: same kind, same parameter.
NSV_PROPERTY(a_spectrum_name_reads_back_as_the_same_spectrum, ()) {
  const Spectrum sp = *named_spectra();
  const std::string name = sp.text();
  RC_LOG() << name << "\n";
  const Spectrum back = parse_spectrum(name);
  RC_ASSERT(back.kind == sp.kind);
  if (sp.kind == Spectrum::Kind::lowrank) RC_ASSERT(back.rank == sp.rank);
  if (sp.kind == Spectrum::Kind::powerlaw) RC_ASSERT(back.alpha == sp.alpha);
  if (sp.kind == Spectrum::Kind::ill_conditioned) RC_ASSERT(back.log10_condition == sp.log10_condition);
  RC_ASSERT(back.text() == name);
}

// The documented forms, one each (spectra.hpp; README "Shape sweeps"), and the names the
// grammar refuses.
BOOST_AUTO_TEST_CASE(the_documented_forms_mean_what_they_say) {
  BOOST_CHECK(parse_spectrum("gaussian").kind == Spectrum::Kind::gaussian);
  const Spectrum low = parse_spectrum("lowrank:3");
  BOOST_CHECK(low.kind == Spectrum::Kind::lowrank && low.rank == 3);
  const Spectrum power = parse_spectrum("powerlaw:0.5");
  BOOST_CHECK(power.kind == Spectrum::Kind::powerlaw && power.alpha == 0.5);
  const Spectrum ill = parse_spectrum("ill_conditioned:6");
  BOOST_CHECK(ill.kind == Spectrum::Kind::ill_conditioned && ill.log10_condition == 6);
  const Spectrum file = parse_spectrum("file:sigma.npy");
  BOOST_CHECK(file.kind == Spectrum::Kind::file && file.path == "sigma.npy");
  for (const char* bad : {"", "gauss", "lowrank:0", "lowrank:2x", "powerlaw:-1", "powerlaw:inf", "ill_conditioned:301", "file:", "rank:3"})
    BOOST_CHECK_THROW(parse_spectrum(bad), std::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
