"""Cosmology and turbulence tools on distributed grids (the public face is `darray.cosmo`).

Modules:
  spectrum: binned power, cross and energy spectra of rfftn/fftn fields (one small psum),
    and interlacing of two painted fields.
  ics: Gaussian random fields with a given P(k), Zel'dovich and 2LPT displacements.
"""
